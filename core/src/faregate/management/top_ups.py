"""The top-up routes (new-api's paths): the top-up page's info, the users' and the admins' order
lists, an admin's manual completion, and for every installed payment provider its ``pay``,
``amount`` and webhook routes (declared by the provider's :class:`~faregate.contracts.payments.PaymentRoutes`).

Webhooks are hardened here, the same for every provider: the body is capped before it is read
(the provider's ``max_webhook_bytes``; a larger declared length is a 413 before a byte is
read), a provider with a problem (an empty secret) refuses callbacks unverified, the signature
is the provider's first step, nothing from the request is logged before it passed, and the
order is completed by :func:`~faregate.payments.orders.complete_top_up` (once, bound to the
provider, money and currency checked). Replays are answered 2xx and credit nothing."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from quart import Blueprint, Quart, Response, request
from quart_schema import document_response, validate_request
from tortoise.exceptions import IntegrityError

from faregate import jsonutil
from faregate.contracts.payments import (
    Checkout,
    Payer,
    PaymentAsk,
    PaymentProvider,
    PaymentRefused,
    Webhook,
    WebhookRejected,
)
from faregate.db import models as m
from faregate.edge.routes import BODY_CAP_ATTRIBUTE, read_capped
from faregate.errors import GatewayError
from faregate.management.common import (
    fail,
    gateway,
    keyword_match,
    ok,
    page_data,
    page_rows,
    public,
    query_text,
    require,
)
from faregate.management.openapi import Body, Done, Ok, Page, Shape, document_stream
from faregate.management.users import login_throttle
from faregate.payments import access_log
from faregate.payments.money import MAX_AMOUNT, AmountDiscount, quote_top_up
from faregate.payments.orders import Completion, complete_top_up, create_top_up, expire_top_up, fail_top_up
from faregate.principals import Principal

if TYPE_CHECKING:
    from faregate.management.host import ManagementHost

log = logging.getLogger("faregate.payments")

blueprint = Blueprint("topups", __name__)

View = Callable[..., Awaitable[Response]]


# ---- orders ----------------------------------------------------------------------------------
class TopUpView(Shape):
    id: int
    user_id: int
    amount: int
    money: float
    currency: str
    quota: int
    trade_no: str
    payment_method: str
    payment_provider: str
    create_time: int
    complete_time: int
    status: str


def top_up_view(row: m.TopUp) -> dict[str, Any]:
    return {"id": row.id, "user_id": row.user_id, "amount": row.amount, "money": float(Decimal(row.money)),
            "currency": row.currency, "quota": row.quota, "trade_no": row.trade_no,
            "payment_method": row.payment_method, "payment_provider": row.payment_provider,
            "create_time": row.create_time, "complete_time": row.complete_time, "status": row.status}


async def _page(user_id: int | None) -> Response:
    """``?keyword=`` matches the order number (wildcards literal) or an exact id."""
    query = m.TopUp.all() if user_id is None else m.TopUp.filter(user_id=user_id)
    keyword = query_text("keyword", 255)
    if keyword:
        query = query.filter(keyword_match(keyword, "trade_no"))
    rows, total, page, size = await page_rows(query)
    return ok(page_data([top_up_view(r) for r in rows], total, page, size))


@blueprint.get("/api/user/topup/self")
@require(m.ROLE_USER)
@document_response(Ok[Page[TopUpView]])
async def my_top_ups(me: Principal) -> Response:
    """The caller's orders, newest first (paged, ``keyword``)."""
    return await _page(me.user.id)


@blueprint.get("/api/user/topup")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[TopUpView]])
async def all_top_ups(me: Principal) -> Response:
    """Every user's orders, newest first (paged, ``keyword``)."""
    return await _page(None)


class CompleteTopUp(Body):
    trade_no: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]


@blueprint.post("/api/user/topup/complete")
@require(m.ROLE_ADMIN)
@validate_request(CompleteTopUp)
@document_response(Done)
async def complete_by_hand(data: CompleteTopUp, me: Principal) -> Response:
    """An admin completes a pending order (the payment arrived but its callback did not), or
    rescues an expired or failed one whose money arrived late: its quota is credited once (a
    gateway's late event for it then credits nothing); an order completed before answers success
    and credits nothing."""
    gw = gateway()
    outcome = await complete_top_up(data.trade_no, provider=None, client_ip=request.remote_addr or "",
                                    quota_per_unit=gw.snapshot.options.quota_per_unit)
    if outcome.status is Completion.REJECTED:
        return fail("the order does not exist" if outcome.reason == "unknown order"
                    else f"the order cannot be completed: {outcome.reason}")
    if outcome.credited:
        log.info("order %s (%s) completed by admin %s: %s quota to user %s", data.trade_no, outcome.was, me.user.id,
                 outcome.quota, outcome.user_id)
        await gw.feed.publish("user", outcome.user_id)
        gw.quota_warnings.recheck([outcome.user_id])  # above the threshold again: a later fall warns again
    return ok()


# ---- the top-up page ---------------------------------------------------------------------------
@blueprint.get("/api/user/topup/info")
@require(m.ROLE_USER)
@document_response(Ok[dict[str, Any]])
async def top_up_info(me: Principal) -> Response:
    """What the top-up page offers: the enabled gateways (``enable_online_topup`` for Epay,
    ``enable_stripe_topup``, ``enable_creem_topup``), ``pay_methods``, ``min_topup``,
    ``amount_options`` and ``discount``, ``creem_products``."""
    gw = gateway()
    options = gw.snapshot.options
    discount: AmountDiscount = options.value("payment_setting.amount_discount")
    data: dict[str, Any] = {"enable_online_topup": False, "enable_stripe_topup": False, "enable_creem_topup": False,
                            "creem_products": [], "pay_methods": [], "min_topup": options.value("MinTopUp"),
                            "amount_options": options.value("payment_setting.amount_options"),
                            "discount": discount.raw}
    methods: list[dict[str, str]] = []
    for provider in gw.payment_providers.values():
        data.update(provider.info())
        methods.extend(provider.pay_methods())
    data["pay_methods"] = methods
    return ok(data)


# ---- a provider's routes ---------------------------------------------------------------------
class PaymentAnswer(BaseModel):
    """new-api's payment envelope (no ``success``): ``message`` is ``success`` with the
    answer in ``data`` (and Epay's form ``url`` beside it), or ``error`` with why in ``data``."""

    model_config = ConfigDict(extra="allow")
    message: Literal["success", "error"]
    data: Any = None


def pay_answer(data: Any, **extra: Any) -> Response:
    return Response(jsonutil.dumps({"message": "success", "data": data, **extra}), content_type="application/json")


def pay_error(reason: str, status: int = 200) -> Response:
    return Response(jsonutil.dumps({"message": "error", "data": reason}), status=status,
                    content_type="application/json")


#: checkouts one user may start in :data:`ORDER_WINDOW` seconds, on every gateway together (new-api's
#: critical rate limit on these routes: 20 in 20 minutes); each makes an order row and calls the gateway
ORDERS_PER_WINDOW = 20
ORDER_WINDOW = 1200.0


async def _order_refused(user_id: int) -> Response | None:
    """A 429 once the user has started too many checkouts (counted in the login throttle's
    counters: Redis when set, so shared by every worker and node)."""
    count, left = await login_throttle().counters.hit(f"faregate:pay:user:{user_id}", ORDER_WINDOW)
    if count <= ORDERS_PER_WINDOW:
        return None
    return pay_error(f"too many payments started: try again in {max(1, math.ceil(left))} s", status=429)


async def _ask(me: Principal, body: BaseModel) -> PaymentAsk:
    row = await m.User.get_or_none(id=me.user.id)
    payer = Payer(id=me.user.id, username=me.user.username, email=row.email if row else "", group=me.user.group)
    return PaymentAsk(payer=payer, body=body, client_ip=request.remote_addr or "")


def _pay_view(provider: PaymentProvider, model: type[BaseModel]) -> View:
    async def pay(data: BaseModel, me: Principal) -> Response:
        problem = provider.problem()
        if problem is not None:
            return pay_error(problem)
        ask = await _ask(me, data)
        try:
            quote = provider.quote(ask)
        except PaymentRefused as refused:
            return pay_error(refused.message)
        if (refused_order := await _order_refused(me.user.id)) is not None:
            return refused_order
        order = None
        for _ in range(3):  # a trade number is random: a collision is retried
            try:
                order = await create_top_up(me.user.id, provider.name, quote, provider.new_trade_no(me.user.id))
                break
            except IntegrityError:
                continue
        if order is None:
            return pay_error("the order could not be created")
        try:
            checkout: Checkout = await provider.create_checkout(order, ask)
        except PaymentRefused as refused:
            await fail_top_up(order.trade_no, provider.name)
            return pay_error(refused.message)
        except Exception as exc:  # the gateway's error (an HTTP failure, a bad answer): named by type only
            log.warning("%s: the checkout of order %s failed (%s)", provider.name, order.trade_no, type(exc).__name__)
            await fail_top_up(order.trade_no, provider.name)
            return pay_error("the payment could not be started")
        log.info("%s: order %s of user %s for %s %s", provider.name, order.trade_no, me.user.id, order.money,
                 order.currency)
        return pay_answer(checkout.data, **checkout.extra)

    return require(m.ROLE_USER)(validate_request(model)(document_response(PaymentAnswer)(pay)))


def _amount_view(provider: PaymentProvider, model: type[BaseModel]) -> View:
    # a price is told whether or not the gateway is set up, as new-api does: its wallet asks on
    # load, and an unset gateway's refusal (which the pay route still gives) toasted every user
    async def amount(data: BaseModel, me: Principal) -> Response:
        try:
            quote = provider.quote(await _ask(me, data))
        except PaymentRefused as refused:
            return pay_error(refused.message)
        return pay_answer(f"{quote.money:.2f}")

    return require(m.ROLE_USER)(validate_request(model)(document_response(PaymentAnswer)(amount)))


#: new-api's price quote of the wallet (``RequestAmount``), served by the core when no installed
#: gateway declares it: the wallet asks on load, whatever gateway is installed
AMOUNT_PATH = "/api/user/amount"
#: new-api's ``Price`` is yuan per unit
PRICE_CURRENCY = "CNY"


class AmountAsk(Body):
    """``{amount}``: the units to price (``payment_method`` is the gateway's, ignored here)."""

    amount: Annotated[int, Field(ge=1, le=MAX_AMOUNT)]
    payment_method: Annotated[str, StringConstraints(max_length=32)] | None = None


@require(m.ROLE_USER)
@validate_request(AmountAsk)
@document_response(PaymentAnswer)
async def price_amount(data: AmountAsk, me: Principal) -> Response:
    """What ``amount`` units cost as new-api prices them without a gateway: ``Price`` (yuan a
    unit) × the group's ``TopupGroupRatio`` × the amount's discount, at least ``MinTopUp`` units."""
    options = gateway().snapshot.options
    try:
        quote = quote_top_up(options, amount=data.amount, group=me.user.group, unit_price=options.value("Price"),
                             currency=PRICE_CURRENCY, payment_method="", min_topup=int(options.value("MinTopUp")))
    except PaymentRefused as refused:
        return pay_error(refused.message)
    return pay_answer(f"{quote.money:.2f}")


def _webhook_view(gw: ManagementHost, provider: PaymentProvider) -> View:
    name = provider.name
    text = provider.routes.webhook_text

    def answer(accepted: bool, status: int = 200, message: str = "") -> Response:
        if text:  # Epay: the body says it, always with a 200
            return Response("success" if accepted else "fail", content_type="text/plain; charset=utf-8")
        return ok() if accepted else fail(message, status=status)

    async def webhook(**_: str) -> Response:
        problem = provider.problem()
        if problem is not None:
            log.warning("%s callback refused unverified: %s", name, problem)
            return answer(False, 400, f"{name} payments are not set up")
        try:
            async with asyncio.timeout(float(gw.settings.body_timeout)):
                body = await read_capped(provider.max_webhook_bytes)
        except GatewayError as err:  # too large: refused before it was read
            return fail(err.message, status=err.status)
        except TimeoutError:
            return fail("timed out reading the request body", status=408)
        callback = Webhook(method=request.method, headers={k.lower(): v for k, v in request.headers.items()},
                           query=request.args.to_dict(), body=body, received_at=time.time())
        try:
            event = await provider.verify_webhook(callback)
        except WebhookRejected as rejected:
            log.warning("%s callback rejected: %s", name, rejected.message)
            return answer(False, rejected.status, rejected.message)
        except Exception as exc:  # a provider's own bug or a body it could not read: never the body itself
            log.warning("%s callback rejected (%s)", name, type(exc).__name__)
            return answer(False, 400, "malformed callback")
        if event.kind == "ignored":
            return answer(True)
        if event.kind == "expired":
            if await expire_top_up(event.trade_no, name):
                log.info("%s: order %s expired unpaid", name, event.trade_no)
            return answer(True)
        outcome = await complete_top_up(event.trade_no, provider=name, money=event.money, currency=event.currency,
                                        event_id=event.event_id, reference=event.reference,
                                        payment_method=event.payment_method, client_ip=request.remote_addr or "",
                                        quota_per_unit=gw.snapshot.options.quota_per_unit)
        if outcome.status is Completion.REJECTED:
            log.warning("%s callback for order %s refused: %s", name, event.trade_no[:64], outcome.reason)
            return answer(False, 400, f"order refused: {outcome.reason}")
        if outcome.credited:
            log.info("%s: order %s paid, %s quota to user %s", name, event.trade_no, outcome.quota, outcome.user_id)
            await gw.feed.publish("user", outcome.user_id)
            gw.quota_warnings.recheck([outcome.user_id])  # above the threshold again: a later fall warns again
        return answer(True)

    view = public(webhook)
    if text:
        view = document_stream("text/plain")(view)
    setattr(view, BODY_CAP_ATTRIBUTE, provider.max_webhook_bytes)
    return view


def install(app: Quart, gw: ManagementHost) -> None:
    """The fixed routes, then every provider's."""
    app.register_blueprint(blueprint)
    gateways = Blueprint("payment_gateways", __name__)
    for provider in gw.payment_providers.values():
        routes, name = provider.routes, provider.name
        for kind, paths, model in (("pay", routes.pay, routes.pay_body), ("amount", routes.amount, routes.amount_body)):
            if not paths:
                continue
            if model is None:
                log.warning("payment provider %s declares %s routes without a body model; not served", name, kind)
                continue
            view = _pay_view(provider, model) if kind == "pay" else _amount_view(provider, model)
            view.__name__ = f"{name}_{kind}"
            for n, path in enumerate(paths):
                gateways.add_url_rule(path, endpoint=f"{name}_{kind}_{n}", view_func=view, methods=["POST"])
        if routes.webhook:
            access_log.protect(routes.webhook)  # the callback's query never reaches the access log
            hook = _webhook_view(gw, provider)
            hook.__name__ = f"{name}_webhook"
            for n, path in enumerate(routes.webhook):
                gateways.add_url_rule(path, endpoint=f"{name}_webhook_{n}", view_func=hook,
                                      methods=list(routes.webhook_methods))
    if not any(AMOUNT_PATH in p.routes.amount for p in gw.payment_providers.values()):
        gateways.add_url_rule(AMOUNT_PATH, endpoint="amount", view_func=price_amount, methods=["POST"])
    app.register_blueprint(gateways)
