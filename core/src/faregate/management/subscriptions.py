"""new-api's subscription routes, for a gateway that has no subscriptions: Faregate bills the
wallet only. new-api's wallet page asks ``GET /api/subscription/plans`` and
``GET /api/subscription/self`` on every load, for every user; answering them 404 put an error in
every switching user's console. So they answer what new-api answers when no plan exists (no
plans, no subscriptions) and the preference that is true here, ``wallet_only``; everything
that would buy, change or administer a subscription is refused in the envelope, naming the
missing feature."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, request
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import fail, ok, require
from faregate.management.openapi import Ok, Shape
from faregate.principals import Principal

blueprint = Blueprint("subscriptions", __name__)

#: the one billing preference a wallet-only gateway has (new-api's spelling)
PREFERENCE = "wallet_only"
REFUSED = "subscriptions are not available: Faregate bills the wallet only"


class SubscriptionSelf(Shape):
    billing_preference: str
    subscriptions: list[dict[str, Any]]
    all_subscriptions: list[dict[str, Any]]


@blueprint.get("/api/subscription/plans")
@require(m.ROLE_USER)
@document_response(Ok[list[dict[str, Any]]])
async def plans(me: Principal) -> Response:
    """The plans on sale: none."""
    return ok([])


@blueprint.get("/api/subscription/self")
@require(m.ROLE_USER)
@document_response(Ok[SubscriptionSelf])
async def own(me: Principal) -> Response:
    """The caller's subscriptions (none) and billing preference (``wallet_only``)."""
    return ok({"billing_preference": PREFERENCE, "subscriptions": [], "all_subscriptions": []})


@blueprint.put("/api/subscription/self/preference")
@require(m.ROLE_USER)
@document_response(Ok[SubscriptionSelf])
async def preference(me: Principal) -> Response:
    """Only ``wallet_only`` (what there is) is accepted."""
    body = await request.get_json(silent=True)
    wanted = body.get("billing_preference") if isinstance(body, dict) else None
    if wanted != PREFERENCE:
        return fail(REFUSED)
    return ok({"billing_preference": PREFERENCE, "subscriptions": [], "all_subscriptions": []})


@document_response(Ok[None])
async def _refused(**_: Any) -> Response:
    """Refused in the envelope: there are no subscriptions to buy or administer."""
    return fail(REFUSED)


for _method, _path, _role in (
        ("POST", "/api/subscription/epay/pay", m.ROLE_USER), ("POST", "/api/subscription/stripe/pay", m.ROLE_USER),
        ("POST", "/api/subscription/creem/pay", m.ROLE_USER),
        ("GET", "/api/subscription/admin/plans", m.ROLE_ADMIN), ("POST", "/api/subscription/admin/plans", m.ROLE_ADMIN),
        ("PUT", "/api/subscription/admin/plans/<int:plan_id>", m.ROLE_ADMIN),
        ("PATCH", "/api/subscription/admin/plans/<int:plan_id>", m.ROLE_ADMIN),
        ("POST", "/api/subscription/admin/bind", m.ROLE_ADMIN)):
    _view = require(_role)(_refused)
    blueprint.add_url_rule(_path, f"refused_{_method}_{_path}".replace("/", "_"), _view, methods=[_method])
