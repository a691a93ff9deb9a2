"""The site's public pages and figures (new-api's system routes): notice, about, home
page, user agreement, privacy policy, pricing (what a user pays per model and group),
ratio config (when exposed), groups (admin) and a status check that pings the database."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint, Response, session
from quart_schema import document_response
from tortoise import connections

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.common import fail, gateway, ok, public, require
from faregate.management.openapi import Ok, Shape

blueprint = Blueprint("site", __name__)

_PAGES = {"/api/notice": "Notice", "/api/about": "About", "/api/home_page_content": "HomePageContent",
          "/api/user-agreement": "UserAgreement", "/api/privacy-policy": "PrivacyPolicy"}


def _page_view(option: str) -> Any:
    async def view() -> Response:
        return ok(gateway().snapshot.options.value(option))

    view.__name__ = f"page_{option}"
    return public(document_response(Ok[str])(view))


for _path, _option in _PAGES.items():
    blueprint.add_url_rule(_path, f"page_{_option}", _page_view(_option), methods=["GET"])


class PriceItem(Shape):
    model_name: str
    quota_type: int
    model_ratio: float
    model_price: float
    completion_ratio: float
    owner_by: str
    enable_groups: list[str]


class Pricing(Ok[list[PriceItem]]):
    """new-api's answer carries two figures beside ``data``."""

    group_ratio: dict[str, float]
    usable_group: dict[str, str]


@blueprint.get("/api/pricing")
@public
@document_response(Pricing)
async def pricing() -> Response:
    """Every model a channel serves in the caller's usable groups (a visitor: the default
    user's), with the prices that apply: new-api's ``{data, group_ratio, usable_group}``."""
    snapshot = gateway().snapshot
    options = snapshot.options
    user = snapshot.users.get(int(session.get("id") or 0))
    usable = options.usable_groups(user.group if user is not None else "default")
    served: dict[str, list[str]] = {}
    for group in usable:
        for model in snapshot.routes.get(group, {}):
            served.setdefault(model, []).append(group)
    data = []
    for model, groups in sorted(served.items()):
        price = options.model_price.get(model)
        data.append({
            "model_name": model, "quota_type": 1 if price is not None else 0,
            "model_ratio": options.model_ratio.get(model, 0.0), "model_price": price or 0.0,
            "completion_ratio": options.completion_ratio.get(model, 1.0), "owner_by": "",
            "enable_groups": groups,
        })
    body = {"success": True, "message": "", "data": data,
            "group_ratio": {g: options.group_ratio.get(g, 1.0) for g in usable}, "usable_group": usable}
    return Response(jsonutil.dumps(body), content_type="application/json")


class RatioConfig(Shape):
    model_ratio: dict[str, float]
    completion_ratio: dict[str, float]
    model_price: dict[str, float]
    cache_ratio: dict[str, float]


@blueprint.get("/api/ratio_config")
@public
@document_response(Ok[RatioConfig])
async def ratio_config() -> Response:
    options = gateway().snapshot.options
    if not options.value("ExposeRatioEnabled"):
        return fail("the ratio config is not exposed", status=403)
    return ok({"model_ratio": options.model_ratio, "completion_ratio": options.completion_ratio,
               "model_price": options.model_price, "cache_ratio": options.cache_ratio})


@blueprint.get("/api/group/")
@require(m.ROLE_ADMIN)
@document_response(Ok[list[str]])
async def groups(me: Any) -> Response:
    return ok(sorted(gateway().snapshot.options.group_ratio))


class DatabaseStatus(Shape):
    database_ms: float


@blueprint.get("/api/status/test")
@require(m.ROLE_ADMIN)
@document_response(Ok[DatabaseStatus])
async def status_test(me: Any) -> Response:
    """Pings the database: 503 when it does not answer."""
    started = time.perf_counter()
    try:
        await connections.get("default").execute_query("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - whatever the driver raises, the answer is "down"
        return fail(f"the database does not answer ({type(exc).__name__})", status=503)
    return ok({"database_ms": round((time.perf_counter() - started) * 1000, 2)})
