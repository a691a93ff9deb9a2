"""new-api's channel affinity cache (``/api/option/channel_affinity_cache``, root). Channel
affinity (keeping a conversation on one channel) is a feature Faregate refuses (its
``channel_affinity_setting.*`` options are read as off), but new-api's models settings tab
reads the cache's counters on every load; the 404 was an error toast there. The counters
answer new-api's shape for affinity switched off: nothing cached. Clearing everything
deletes nothing; clearing one rule's entries is new-api's "unknown rule" answer, since there
are no rules."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, request
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import fail, ok, require
from faregate.management.openapi import Ok
from faregate.principals import Principal

blueprint = Blueprint("channel_affinity", __name__)

PATH = "/api/option/channel_affinity_cache"


@blueprint.get(PATH)
@require(m.ROLE_ROOT)
@document_response(Ok[dict[str, Any]])
async def cache_stats(me: Principal) -> Response:
    """Affinity is off: no entries, no rules, no cache."""
    return ok({"enabled": False, "total": 0, "unknown": 0, "by_rule_name": {}, "cache_capacity": 0,
               "cache_algo": ""})


@blueprint.delete(PATH)
@require(m.ROLE_ROOT)
@document_response(Ok[dict[str, Any]])
async def clear_cache(me: Principal) -> Response:
    """``all=true`` deletes the nothing there is; a rule name is unknown, as there are no rules."""
    if request.args.get("all", "").strip() == "true":
        return ok({"deleted": 0})
    if not request.args.get("rule_name", "").strip():
        return fail("缺少参数：rule_name，或使用 all=true 清空全部", 400)
    return fail("未知规则名称", 400)
