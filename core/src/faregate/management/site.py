"""The site's public pages and figures (new-api's system routes): notice, about, home
page, user agreement, privacy policy, pricing (what a user pays per model and group),
ratio config (when exposed), groups (admin) and a status check that pings the database."""

from __future__ import annotations

import time
from typing import Any

from quart import Blueprint, Response
from quart_schema import document_response
from tortoise import connections

from faregate import jsonutil
from faregate.billing.groups import AUTO
from faregate.billing.ratios import matching_name
from faregate.db import models as m
from faregate.management.common import fail, gateway, ok, public, require
from faregate.management.model_meta import matches
from faregate.management.openapi import Ok, Shape

blueprint = Blueprint("site", __name__)

#: path -> (option, the option it falls back to when empty): new-api's console writes the legal
#: pages as legal.user_agreement / legal.privacy_policy, Faregate's own names came first
_PAGES = {"/api/notice": ("Notice", ""), "/api/about": ("About", ""), "/api/home_page_content": ("HomePageContent", ""),
          "/api/user-agreement": ("legal.user_agreement", "UserAgreement"),
          "/api/privacy-policy": ("legal.privacy_policy", "PrivacyPolicy")}


def _page_view(option: str, fallback: str) -> Any:
    async def view() -> Response:
        options = gateway().snapshot.options
        return ok(options.value(option) or (options.value(fallback) if fallback else ""))

    view.__name__ = f"page_{option.replace('.', '_')}"
    return public(document_response(Ok[str])(view))


for _path, (_option, _fallback) in _PAGES.items():
    blueprint.add_url_rule(_path, f"page_{_option.replace('.', '_')}", _page_view(_option, _fallback), methods=["GET"])


class PriceItem(Shape):
    model_name: str
    quota_type: int
    model_ratio: float
    model_price: float
    completion_ratio: float
    owner_by: str
    enable_groups: list[str]
    # only where the options price the model so (new-api's omitempty)
    cache_ratio: float | None = None
    create_cache_ratio: float | None = None
    image_ratio: float | None = None
    audio_ratio: float | None = None
    audio_completion_ratio: float | None = None
    # from the model's metadata (/api/models/), when a row covers it
    vendor_id: int | None = None
    description: str | None = None
    icon: str | None = None
    tags: str | None = None


class PriceVendor(Shape):
    id: int
    name: str
    description: str
    icon: str


class Pricing(Ok[list[PriceItem]]):
    """new-api's answer carries these beside ``data``."""

    group_ratio: dict[str, float]
    usable_group: dict[str, str]
    auto_groups: list[str]
    vendors: list[PriceVendor]


async def _metadata(models: list[str]) -> dict[str, m.ModelMeta]:
    """The enabled metadata row of each model: its exact row, else the longest rule that
    matches it (prefix, then contains, then suffix)."""
    rows = await m.ModelMeta.filter(status=1)
    exact = {r.model_name: r for r in rows if r.name_rule == 0}
    rules = sorted((r for r in rows if r.name_rule != 0), key=lambda r: (r.name_rule, -len(r.model_name)))
    found: dict[str, m.ModelMeta] = {}
    for model in models:
        row = exact.get(model) or next((r for r in rules if matches(r.name_rule, r.model_name, model)), None)
        if row is not None:
            found[model] = row
    return found


@blueprint.get("/api/pricing")
@public
@document_response(Pricing)
async def pricing() -> Response:
    """Every model a channel serves in the caller's usable groups (a visitor: the default
    user's), with the prices that apply: new-api's ``{data, group_ratio, usable_group,
    auto_groups}``. A fixed price per call (``ModelPrice``) is ``quota_type`` 1 with
    ``model_price`` in US dollars; otherwise ``quota_type`` 0 with the ratios. ``group_ratio``
    is what the caller pays in each usable group (its user group's ``GroupGroupRatio`` over
    ``GroupRatio``)."""
    snapshot = gateway().snapshot
    options = snapshot.options
    user = gateway().services.accounts.session_user()  # a live login only (not one logged out)
    user_group = user.group if user is not None else "default"
    usable = options.usable_groups(user_group)
    served: dict[str, list[str]] = {}
    for group in usable:
        for model in snapshot.routes.get(group, {}):
            served.setdefault(model, []).append(group)
    extras = (("cache_ratio", options.cache_ratio), ("create_cache_ratio", options.create_cache_ratio),
              ("image_ratio", options.image_ratio), ("audio_ratio", options.audio_ratio),
              ("audio_completion_ratio", options.audio_completion_ratio))
    # the names a model's ratios are found under (new-api's matching: gizmo, thinking budgets)
    matched = {"audio_ratio", "audio_completion_ratio"}
    meta = await _metadata(list(served))
    vendor_ids = {row.vendor_id for row in meta.values() if row.vendor_id}
    vendors = await m.Vendor.filter(id__in=vendor_ids, status=1).order_by("id") if vendor_ids else []
    vendor_names = {v.id: v.name for v in vendors}
    data = []
    for model, groups in sorted(served.items()):
        price = options.price_of(model)
        row = meta.get(model)
        item: dict[str, Any] = {"model_name": model, "owner_by": "", "enable_groups": groups}
        if row is not None:
            item.update(description=row.description, icon=row.icon, tags=row.tags,
                        vendor_id=row.vendor_id if row.vendor_id in vendor_names else 0,
                        owner_by=vendor_names.get(row.vendor_id, ""))
        if price is not None:
            item.update(quota_type=1, model_price=price, model_ratio=0.0, completion_ratio=0.0)
        else:
            item.update(quota_type=0, model_price=0.0, model_ratio=options.ratio_of(model) or 0.0,
                        completion_ratio=options.completion_ratio_of(model))
        for name, table in extras:
            key = matching_name(model) if name in matched else model
            if key in table:
                item[name] = table[key]
        data.append(item)
    body = {"success": True, "message": "", "data": data,
            "group_ratio": {g: options.group_ratio_for(user_group, g) for g in usable if g != AUTO},
            "usable_group": usable, "auto_groups": options.user_auto_groups(user_group),
            "vendors": [{"id": v.id, "name": v.name, "description": v.description, "icon": v.icon} for v in vendors]}
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
