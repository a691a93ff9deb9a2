"""Admission: who is calling, may they use this model, what will it cost, and the
reservation that pays for it. Nothing here calls an upstream."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from faregate import jsonutil
from faregate.awaitables import await_me_maybe
from faregate.billing.ledger import InsufficientQuota
from faregate.billing.pricing import Price, prompt_bound, reserve_quota
from faregate.contracts import AuthRequest
from faregate.db import models as m
from faregate.errors import GatewayError, bad_request, model_not_found
from faregate.exchange import sensitive
from faregate.exchange.attempts import Operation, unable_channels
from faregate.multipart import Form, is_multipart, parse_form
from faregate.principals import Principal

if TYPE_CHECKING:
    from faregate.billing.ledger import Reservation
    from faregate.exchange.exchange import Exchange

P = ParamSpec("P")
T = TypeVar("T")


async def authenticate(ex: Exchange) -> Principal:
    """The request's API key, in its format's place for it (on a route for the login
    session, that session), after catching up with changes other workers made."""
    gw = ex.gateway
    await gw.feed.catch_up()
    req = ex.request
    if req.session is not None:  # the edge hands a session to a route for it alone
        return await _login_session(ex)
    auth_req = AuthRequest(headers=req.headers, args=req.query, remote_addr=req.client_ip, format=ex.format,
                           api_key=ex.format.api_key(req))
    for authenticator in gw.api_key_authenticators:
        principal = await await_me_maybe(authenticator.authenticate(auth_req))
        if principal is not None:
            ex.principal = principal
            return principal
    raise GatewayError(401, "no API key provided", code="invalid_api_key", type="new_api_error")


async def _login_session(ex: Exchange) -> Principal:
    """The logged-in user, as the management API takes them: the session cookie and
    ``New-Api-User`` naming its user. Never an API key or access token (new-api refuses
    them there), so the ``Authorization`` an SDK always sends is ignored beside a session."""
    req = ex.request
    auth_req = AuthRequest(headers=req.headers, args=req.query, remote_addr=req.client_ip, format=ex.format,
                           cookies=req.cookies, session=req.session)
    for authenticator in ex.gateway.session_authenticators:
        principal = await await_me_maybe(authenticator.authenticate(auth_req))
        if principal is not None:
            break
    else:
        raise GatewayError(401, "not logged in: this endpoint takes the login session (its cookie and the "
                                "New-Api-User header), not an API key or access token", code="unauthorized")
    named = (req.headers.get("new-api-user") or "").strip()
    if not named:
        raise GatewayError(401, "missing New-Api-User header", code="unauthorized")
    if not (named.isascii() and named.isdecimal() and len(named) < 20) or int(named) != principal.user.id:
        raise GatewayError(401, "New-Api-User does not match the logged-in user", code="unauthorized")
    if principal.user.status != m.USER_ENABLED:
        raise GatewayError(403, "the user is disabled", code="access_denied")
    ex.principal = principal
    return principal


async def read_body(ex: Exchange) -> bytes:
    """The whole body, under the route's byte cap and the body timeout (a timer armed only
    while some of it is still on its way: most bodies are in before the view runs)."""
    arrived = ex.request.body_arrived
    if arrived is not None and arrived():
        return await ex.request.read_body()
    try:
        async with asyncio.timeout(ex.gateway.settings.body_timeout):
            return await ex.request.read_body()
    except TimeoutError:
        raise GatewayError(408, "timed out reading the request body", code="read_request_body_failed") from None


async def read_json(ex: Exchange) -> tuple[bytes, dict[str, Any]]:
    """The body as bytes and as a JSON object; 400 when it is not one. A big body is parsed
    in its turn in the worker's big-body lane (:mod:`faregate.exchange.big_bodies`)."""
    raw = await read_body(ex)
    try:
        if len(raw) > ex.gateway.settings.offload_body_kb * 1024:
            async with ex.gateway.big_bodies.turn():
                body = _parse_big(raw)
        else:
            body = jsonutil.loads(raw)
    except jsonutil.JSONDecodeError:
        raise bad_request("request body is not valid JSON", code="bad_request_body") from None
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object", code="bad_request_body")
    return raw, body


async def work_on_body(ex: Exchange, raw: bytes, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``work(*args, **kwargs)``: CPU work on the request body ``raw`` (checking it, estimating
    its tokens). On the event loop for a body up to ``FAREGATE_OFFLOAD_BODY_KB``; a bigger
    one's in a worker thread, in its turn in the worker's big-body lane. With the sensitive-word
    check on, the texts the work counts (a format's estimate) are scanned as it goes
    (:mod:`faregate.exchange.sensitive`); :meth:`Exchange.begin` refuses what it found."""
    matcher = sensitive.prompt_matcher(ex.gateway.snapshot.options)
    if matcher is None:
        return await run_on_body(ex, raw, work, *args, **kwargs)
    scan = sensitive.PromptScan(matcher)

    def scanned() -> T:
        return scan.run(work, *args, **kwargs)

    result = await run_on_body(ex, raw, scanned)
    if scan.found is not None:
        ex.extra[sensitive.FOUND_KEY] = scan.found
    return result


async def run_on_body(ex: Exchange, raw: bytes, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """:func:`work_on_body` without the sensitive-word scan: for work whose request is never
    refused for its words (a token count)."""
    if len(raw) <= ex.gateway.settings.offload_body_kb * 1024:
        return work(*args, **kwargs)
    async with ex.gateway.big_bodies.turn():
        return await asyncio.to_thread(work, *args, **kwargs)


async def read_form(ex: Exchange) -> Form:
    """A ``multipart/form-data`` body, read whole under the route's cap, then parsed
    under the form's own limits (parts, text field size); 400 when it is not a form.
    The bytes as received are kept in ``ex.raw``, to forward unchanged when nothing changes."""
    content_type = ex.request.headers.get("content-type")
    if not is_multipart(content_type):
        raise bad_request("request body must be multipart/form-data", code="bad_request_body")
    assert content_type is not None
    raw = ex.raw = await read_body(ex)
    if len(raw) > ex.gateway.settings.offload_body_kb * 1024:
        return await asyncio.to_thread(parse_form, raw, content_type)  # parsing megabytes: off the loop
    return parse_form(raw, content_type)


def _parse_big(raw: bytes) -> Any:
    # orjson holds the GIL for the whole call, so a worker thread would not free the loop;
    # what makes a big parse slow (5x) is the cyclic GC re-running as millions of containers
    # are allocated. Nothing else runs during the call, so pause the collector for it.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return jsonutil.loads(raw)
    finally:
        if collecting:
            gc.enable()


def check_model_allowed(principal: Principal, model: str) -> None:
    """403 when the caller's API key is limited to other models."""
    token = principal.token
    if token is not None and token.model_limits is not None and model not in token.model_limits:
        raise GatewayError(403, f"this API key may not use model {model}", code="access_denied")


def price(ex: Exchange) -> Price:
    """The first pricer's price, times the request's own other ratios."""
    for pricer in ex.gateway.pricers:
        found = pricer.price(ex, None)
        if found is not None:
            ratios = ex.summary.other_ratios if ex.summary is not None else None
            return dataclasses.replace(found, other_ratios=ratios) if ratios else found
    raise GatewayError(500, f"no price configured for model {ex.model}", code="model_price_error")


async def admit(ex: Exchange, operation: Operation | None = None) -> None:
    """A routable model, a channel that can serve ``operation``'s endpoint (when given), a
    price, every quota check, then the reservation."""
    gw = ex.gateway
    principal = ex.principal
    summary = ex.summary
    assert principal is not None and summary is not None, "authenticate and begin before admit"
    if principal.auto_groups and principal.pinned_channel is None:
        # an ``auto`` key: the first of its groups serving the model (its price is that group's)
        principal.group = next((g for g in principal.auto_groups if gw.snapshot.levels(g, summary.model)),
                               principal.auto_groups[0])
    if not gw.snapshot.levels(principal.group, summary.model) and principal.pinned_channel is None:
        raise model_not_found(summary.model, principal.group)
    if operation is not None:
        # from the routing snapshot, no database: a model only channels that cannot serve the
        # endpoint have is told so (naming the endpoint) rather than that it has no price; the
        # attempts start from the same set
        levels = gw.snapshot.levels(principal.group, summary.model)
        ex.unable_at_admission = (operation, levels, unable_channels(ex, operation))
    # the rate limits before any money moves: a refused request reserves nothing
    limits = gw.snapshot.options.limits
    if gw.limiter.applies(principal, limits):  # else not even an await
        estimate = limit_estimate(summary.prompt_tokens, summary.max_tokens, summary.answers)
        ex.limit_ticket = await gw.limiter.admit(principal, limits, ex.request_id, estimate)
    ex.price = price(ex)
    await _reserve_request(ex)


def limit_estimate(prompt_tokens: int, max_tokens: int | None, answers: int) -> int:
    """The tokens a request counts against a tokens-per-minute limit until its answer settles:
    its prompt's estimate and the output its client bounds it to (a request that sets no
    bound counts its prompt alone; the answer's real count corrects either)."""
    return prompt_tokens + (max_tokens or 0) * answers


#: the fewest output tokens per answer the gateway bounds a request that sets none to (OpenAI's
#: least ``max_output_tokens``), also when the balance cannot cover its model's limit; below it, the 403
MIN_AFFORDABLE_OUTPUT = 16
#: reservations tried at what the balance affords, re-read each time (others spend it meanwhile)
AFFORDABLE_TRIES = 3


async def _reserve_request(ex: Exchange) -> None:
    """Reserve the most the request can be billed: its prompt's bound, and its output bound
    (the client's own; else the model's output limit per answer, which then goes upstream).
    A client's own bound the balance cannot cover is the 403; the gateway's is lowered to
    what the balance affords, down to :data:`MIN_AFFORDABLE_OUTPUT`."""
    gw = ex.gateway
    summary, price = ex.summary, ex.price
    assert summary is not None and price is not None
    prompt = prompt_bound(summary.prompt_tokens)
    cap: int | None = None
    if summary.max_tokens is not None:
        output = summary.max_tokens
    else:
        # a format whose API has a default bound of its own proposes it; else the model's limit
        cap = summary.output_cap or max(MIN_AFFORDABLE_OUTPUT, gw.snapshot.options.max_output_of(summary.model))
        output = cap * summary.answers
    estimate = reserve_quota(price, prompt, output)
    for check in gw.quota_checks:
        denial = await await_me_maybe(check.check(ex, estimate))
        if denial is not None:
            raise denial
    # the bound matters to money only for a price per token, and holds only when it goes upstream
    capped = cap is not None and summary.sends_output_cap and price.model_price is None and not price.free
    try:
        ex.reservation = await reserve(ex, estimate)
    except GatewayError as refused:
        if capped and cap is not None:
            ex.reservation, cap = await _reserve_affordable(ex, prompt, cap, refused)
        elif summary.max_tokens is not None and summary.sends_output_cap and price.model_price is None:
            raise await _what_is_affordable(ex, prompt, summary.max_tokens, refused) from None
        else:
            raise
    if capped:
        summary.output_cap = cap


async def _reserve_affordable(ex: Exchange, prompt: int, cap: int, refused: GatewayError) -> tuple[Reservation, int]:
    """The reservation of the most output per answer (at most ``cap``) the caller's balance
    covers now, and that bound; ``refused`` (the 403) when not even the least."""
    summary, price, principal = ex.summary, ex.price, ex.principal
    assert summary is not None and price is not None and principal is not None
    for _ in range(AFFORDABLE_TRIES):
        available = await ex.gateway.ledger.available(principal.user.id, limited_key(principal))
        tokens = _most_output(price, prompt, summary.answers, min(cap, MIN_AFFORDABLE_OUTPUT), cap, available)
        if tokens is None:
            break
        try:
            return await reserve(ex, reserve_quota(price, prompt, tokens * summary.answers)), tokens
        except GatewayError as err:  # spent by another request meanwhile: read the balance again
            refused = err
    raise refused


async def _what_is_affordable(ex: Exchange, prompt: int, asked: int, refused: GatewayError) -> GatewayError:
    """The 403 for a client's own output bound its balance cannot cover, saying how much it does
    (one read of the balances: on the refusal only)."""
    price, principal = ex.price, ex.principal
    assert price is not None and principal is not None
    available = await ex.gateway.ledger.available(principal.user.id, limited_key(principal))
    covered = _most_output(price, prompt, 1, 1, asked, available) or 0
    return GatewayError(refused.status, f"{refused.message}: this request may write up to {asked} output tokens "
                        f"and the quota covers {covered}; ask for fewer (max tokens) or add quota",
                        type=refused.type, code=refused.code)


def _most_output(price: Price, prompt: int, answers: int, least: int, most: int, available: int) -> int | None:
    """The most output tokens per answer, from ``least`` to ``most``, whose reservation fits
    ``available``; None when not even ``least`` does (the cost only grows with the tokens)."""
    if reserve_quota(price, prompt, least * answers) > available:
        return None
    while least < most:
        middle = (least + most + 1) // 2
        if reserve_quota(price, prompt, middle * answers) <= available:
            least = middle
        else:
            most = middle - 1
    return least


def limited_key(principal: Principal) -> int | None:
    """The caller's key when its quota is limited (a reservation draws on it too), else None."""
    token = principal.token
    return None if token is None or token.unlimited else token.id


async def reserve(ex: Exchange, amount: int) -> Reservation:
    """``amount`` reserved from the caller's user and key quota; 403 when either is short."""
    principal = ex.principal
    assert principal is not None, "authenticate before reserving"
    try:
        return await ex.gateway.ledger.reserve(principal.user.id, limited_key(principal), amount)
    except InsufficientQuota as exc:
        if exc.kind == "token":
            raise GatewayError(403, "the API key's quota is not enough for this request",
                               code="pre_consume_token_quota_failed") from None
        raise GatewayError(403, "user quota is not enough", code="insufficient_user_quota") from None
