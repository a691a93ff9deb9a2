"""The balance of an OpenAI account, as new-api reads it for OpenAI and Custom channels: the
subscription's hard limit (``GET /v1/dashboard/billing/subscription``) minus what was spent
since the start of the billing window (``GET /v1/dashboard/billing/usage``, in cents). The
window is the current month for an account with a payment method, else the last 100 days."""

from __future__ import annotations

import datetime
import math
from typing import Any

from faregate.api import BalanceFetch, UpstreamRequest, UpstreamTarget, join_url, json_loads, malformed_response

SUBSCRIPTION_PATH = "/v1/dashboard/billing/subscription"
USAGE_PATH = "/v1/dashboard/billing/usage"
#: without a payment method, usage is counted over this many days
FREE_WINDOW_DAYS = 100


def usage_window(today: datetime.date, has_payment_method: bool) -> tuple[str, str]:
    """``(start_date, end_date)`` of the usage query, ``YYYY-MM-DD``."""
    start = today.replace(day=1) if has_payment_method else today - datetime.timedelta(days=FREE_WINDOW_DAYS)
    return start.isoformat(), today.isoformat()


def _number(obj: Any, name: str) -> float:
    value = obj.get(name) if isinstance(obj, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise malformed_response()
    return float(value)


def _json(body: bytes) -> dict[str, Any]:
    try:
        obj = json_loads(body)
    except ValueError:
        raise malformed_response() from None
    if not isinstance(obj, dict):
        raise malformed_response()
    return obj


async def fetch_balance(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str],
                        today: datetime.date | None = None) -> float:
    """USD left: ``hard_limit_usd - total_usage / 100``."""
    subscription = _json(await fetch(UpstreamRequest("GET", join_url(target.base_url, SUBSCRIPTION_PATH),
                                                     dict(headers))))
    hard_limit = _number(subscription, "hard_limit_usd")
    start, end = usage_window(today or datetime.date.today(), subscription.get("has_payment_method") is True)
    url = f"{join_url(target.base_url, USAGE_PATH)}?start_date={start}&end_date={end}"
    usage = _json(await fetch(UpstreamRequest("GET", url, dict(headers))))
    return hard_limit - _number(usage, "total_usage") / 100
