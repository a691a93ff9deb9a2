"""OpenAI's legacy billing endpoints as new-api serves them to API keys (old OpenAI
clients and balance scripts call them): ``GET /dashboard/billing/subscription`` (and
under ``/v1``) reports the key's quota, remaining plus used, as ``hard_limit_usd``;
``GET /dashboard/billing/usage`` what it spent, in cents. With the option
``DisplayTokenStatEnabled`` off they report the key owner's balance instead. Amounts
follow the display type (``USD``, ``CNY`` at ``USDExchangeRate``, ``CUSTOM`` at its rate,
``TOKENS`` as quota units); an unlimited key reports 100,000,000."""

from __future__ import annotations

from typing import Any

from faregate.api import Balance, Exchange, GatewayError, Outcome, Route, Services

SUBSCRIPTION, USAGE = "billing_subscription", "billing_usage"
ROUTES = [Route("GET", prefix + path, kind=kind)
          for prefix in ("", "/v1")
          for path, kind in (("/dashboard/billing/subscription", SUBSCRIPTION), ("/dashboard/billing/usage", USAGE))]
UNLIMITED_AMOUNT = 100_000_000.0


def amount(quota: int, options: Any) -> float:
    """Quota units in the display type's money (or units, for ``TOKENS``)."""
    display = options.value("general_setting.quota_display_type")
    if display == "TOKENS":
        return float(quota)
    dollars = quota / options.quota_per_unit
    if display == "CNY":
        return float(dollars * options.value("USDExchangeRate"))
    if display == "CUSTOM":
        return float(dollars * options.value("general_setting.custom_currency_exchange_rate"))
    return float(dollars)


class BillingDriver:
    def __init__(self, services: Services, kind: str) -> None:
        self.services = services
        self.kind = kind

    async def handle(self, ex: Exchange) -> Outcome:
        principal = await ex.authenticate()
        services = self.services
        options = services.options
        token = principal.token
        by_token = token is not None and bool(options.value("DisplayTokenStatEnabled"))
        balance: Balance | None
        if by_token:
            assert token is not None
            balance = await services.balance("token", token.id)
        else:
            balance = await services.balance("user", principal.user.id)
        if balance is None:  # deleted between the key check and now
            raise GatewayError(401, "the API key is no longer valid", code="invalid_api_key")
        if self.kind == USAGE:
            return ex.json({"object": "list", "total_usage": amount(balance.used, options) * 100})
        total = UNLIMITED_AMOUNT if by_token and balance.unlimited else amount(balance.remaining + balance.used,
                                                                              options)
        return ex.json({"object": "billing_subscription", "has_payment_method": True, "soft_limit_usd": total,
                        "hard_limit_usd": total, "system_hard_limit_usd": total,
                        "access_until": balance.expires if by_token else 0})


def drivers(services: Services) -> list[BillingDriver]:
    return [BillingDriver(services, SUBSCRIPTION), BillingDriver(services, USAGE)]
