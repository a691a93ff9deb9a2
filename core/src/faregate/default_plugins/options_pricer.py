"""The core's default pricer (its hook: :mod:`.pricing`), apart from the hook that registers it:
loading the plugins (every command does) imports none of the billing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faregate.billing.model_prices import options_price
from faregate.billing.pricing import Price
from faregate.canonical import Usage
from faregate.errors import GatewayError
from faregate.services import Services

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange


class OptionsPricer:
    def __init__(self, services: Services) -> None:
        self.services = services

    def price(self, exchange: Exchange, usage: Usage | None) -> Price:
        options = self.services.options
        model = exchange.model
        assert exchange.principal is not None
        principal = exchange.principal
        price = options_price(options, model, float(options.group_ratio_for(principal.user.group, principal.group)))
        if price is None:
            raise GatewayError(500, f"model {model} has no ratio or price configured", code="model_price_error")
        return price
