"""The default pricer: new-api's ratios from the options table (ModelRatio,
CompletionRatio, CacheRatio, CreateCacheRatio, ImageRatio, AudioRatio, AudioCompletionRatio, ModelPrice,
GroupRatio, GroupGroupRatio), read from the snapshot: no database round trip per request. A model is
found as new-api finds it (its matching name, its family's completion ratio: faregate.billing.ratios)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl
from faregate.billing.model_prices import options_price
from faregate.billing.pricing import Price
from faregate.canonical import Usage
from faregate.errors import GatewayError
from faregate.exchange.policies import Pricer
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


@hookimpl(trylast=True)
def register_pricers(register: Callable[[Pricer], None], services: Services) -> None:
    register(OptionsPricer(services))
