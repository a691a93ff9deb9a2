"""The balance behind a channel key, as new-api reads it (controller/channel-billing.go), in
US dollars: one reader per balance API a preset row names (:attr:`Preset.balance`).

- ``openai`` (OpenAI, Custom): the subscription's hard limit (``GET
  /v1/dashboard/billing/subscription``) minus what was spent since the start of the billing
  window (``GET /v1/dashboard/billing/usage``, in cents). The window is the current month for
  an account with a payment method, else the last 100 days.
- ``deepseek``: ``GET /user/balance``, the ``total_balance`` of its ``balance_infos``: the US
  dollar entry, else the yuan one converted (new-api takes the yuan amount as it is).
- ``openrouter``: ``GET /api/v1/credits``, ``total_credits - total_usage`` (dollars).
- ``siliconflow``: ``GET /v1/user/info``, ``totalBalance`` (yuan, converted) when ``code`` is
  20000 (new-api keeps the yuan amount).
- ``moonshot``: ``GET /v1/users/me/balance``, ``available_balance`` when ``status`` holds and
  ``code`` is 0; yuan on ``api.moonshot.cn`` converted as new-api does, dollars on the
  international ``api.moonshot.ai``.

Yuan become dollars at the ``USDExchangeRate`` option (yuan per dollar, new-api's
``Price``). An answer that is not the vendor's shape is a ``bad_response_body`` error; a
vendor's "not OK" envelope names its code, never its text (which might quote the key)."""

from __future__ import annotations

import datetime
import math
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

from faregate.api import (
    BalanceFetch,
    GatewayError,
    UpstreamRequest,
    UpstreamTarget,
    join_url,
    json_loads,
    malformed_response,
)

SUBSCRIPTION_PATH = "/v1/dashboard/billing/subscription"
USAGE_PATH = "/v1/dashboard/billing/usage"
#: without a payment method, usage is counted over this many days
FREE_WINDOW_DAYS = 100


def usage_window(today: datetime.date, has_payment_method: bool) -> tuple[str, str]:
    """``(start_date, end_date)`` of the usage query, ``YYYY-MM-DD``."""
    start = today.replace(day=1) if has_payment_method else today - datetime.timedelta(days=FREE_WINDOW_DAYS)
    return start.isoformat(), today.isoformat()


def _number(obj: Any, name: str) -> float:
    """``obj[name]``, a finite number or (DeepSeek's, SiliconFlow's) a decimal string."""
    value = obj.get(name) if isinstance(obj, dict) else None
    if isinstance(value, str) and 0 < len(value) <= 40:
        try:
            value = float(value)
        except ValueError:
            raise malformed_response() from None
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


# ---- the vendors' own balance APIs -----------------------------------------------------------
#: a reader: ``(target, fetch, headers, yuan per dollar)`` → dollars
BalanceReader = Callable[[UpstreamTarget, BalanceFetch, dict[str, str], float], Awaitable[float]]
DEEPSEEK_PATH = "/user/balance"
OPENROUTER_PATH = "/v1/credits"
SILICONFLOW_PATH = "/v1/user/info"
MOONSHOT_PATH = "/v1/users/me/balance"
SILICONFLOW_OK = 20000
#: hosts whose Moonshot account is kept in dollars (the international platform)
MOONSHOT_DOLLAR_HOSTS = ("moonshot.ai",)


def _refused(vendor: str, code: Any) -> GatewayError:
    shown = code if isinstance(code, int) and not isinstance(code, bool) else "?"
    return GatewayError(502, f"{vendor} did not report the balance (code {shown})", code="bad_response_body",
                        upstream=True)


async def _get(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str], path: str) -> dict[str, Any]:
    return _json(await fetch(UpstreamRequest("GET", join_url(target.base_url, path), dict(headers))))


async def deepseek_balance(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str],
                           yuan_per_dollar: float) -> float:
    """DeepSeek's ``/user/balance`` sits beside its OpenAI root, not under it: a base URL the
    admin gave with ``/v1`` loses it."""
    base = target.base_url.rstrip("/").removesuffix("/v1")
    answer = _json(await fetch(UpstreamRequest("GET", base + DEEPSEEK_PATH, dict(headers))))
    infos = answer.get("balance_infos")
    if not isinstance(infos, list):
        raise malformed_response()
    by_currency = {info.get("currency"): info for info in infos if isinstance(info, dict)}
    if "USD" in by_currency:
        return _number(by_currency["USD"], "total_balance")
    if "CNY" in by_currency:
        return _number(by_currency["CNY"], "total_balance") / yuan_per_dollar
    raise GatewayError(502, "DeepSeek reported no balance in USD or CNY", code="bad_response_body", upstream=True)


async def openrouter_balance(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str],
                             yuan_per_dollar: float) -> float:
    data = (await _get(target, fetch, headers, OPENROUTER_PATH)).get("data")
    return _number(data, "total_credits") - _number(data, "total_usage")


async def siliconflow_balance(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str],
                              yuan_per_dollar: float) -> float:
    answer = await _get(target, fetch, headers, SILICONFLOW_PATH)
    if answer.get("code") != SILICONFLOW_OK:
        raise _refused("SiliconFlow", answer.get("code"))
    return _number(answer.get("data"), "totalBalance") / yuan_per_dollar


async def moonshot_balance(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str],
                           yuan_per_dollar: float) -> float:
    answer = await _get(target, fetch, headers, MOONSHOT_PATH)
    if answer.get("status") is not True or answer.get("code") != 0:
        raise _refused("Moonshot", answer.get("code"))
    available = _number(answer.get("data"), "available_balance")
    host = (urlsplit(target.base_url).hostname or "").lower()
    if any(host == h or host.endswith("." + h) for h in MOONSHOT_DOLLAR_HOSTS):
        return available
    return available / yuan_per_dollar


async def openai_balance(target: UpstreamTarget, fetch: BalanceFetch, headers: dict[str, str],
                         yuan_per_dollar: float) -> float:
    return await fetch_balance(target, fetch, headers)


#: the balance APIs a preset row may name
READERS: Mapping[str, BalanceReader] = MappingProxyType({
    "openai": openai_balance, "deepseek": deepseek_balance, "openrouter": openrouter_balance,
    "siliconflow": siliconflow_balance, "moonshot": moonshot_balance})
