"""The default pricer: new-api's ratios from the options table (ModelRatio,
CompletionRatio, CacheRatio, CreateCacheRatio, ImageRatio, AudioRatio, AudioCompletionRatio, ModelPrice,
GroupRatio, GroupGroupRatio), read from the snapshot: no database round trip per request. A model is
found as new-api finds it (its matching name, its family's completion ratio: faregate.billing.ratios)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl
from faregate.billing.pricing import Price
from faregate.canonical import Usage
from faregate.contracts import Pricer
from faregate.errors import GatewayError
from faregate.services import Services

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange

SELF_USE_RATIO = 37.5


class OptionsPricer:
    def __init__(self, services: Services) -> None:
        self.services = services

    def price(self, exchange: Exchange, usage: Usage | None) -> Price:
        options = self.services.options
        model = exchange.model
        assert exchange.principal is not None
        principal = exchange.principal
        group_ratio = float(options.group_ratio_for(principal.user.group, principal.group))
        fixed = options.price_of(model)
        if fixed is not None:
            return Price(model_price=float(fixed), group_ratio=group_ratio,
                         quota_per_unit=options.quota_per_unit)
        ratio = options.ratio_of(model)
        if ratio is None:
            if not options.self_use_mode:
                raise GatewayError(500, f"model {model} has no ratio or price configured",
                                   code="model_price_error")
            ratio = SELF_USE_RATIO
        return Price(
            model_ratio=float(ratio),
            completion_ratio=float(options.completion_ratio_of(model)),
            cache_ratio=float(options.cache_ratio_of(model)),
            cache_write_ratio=float(options.create_cache_ratio_of(model)),
            image_ratio=float(options.image_ratio_of(model)),
            audio_ratio=float(options.audio_ratio_of(model)),
            audio_completion_ratio=float(options.audio_completion_ratio_of(model)),
            group_ratio=group_ratio,
            quota_per_unit=options.quota_per_unit,
        )


@hookimpl(trylast=True)
def register_pricers(register: Callable[[Pricer], None], services: Services) -> None:
    register(OptionsPricer(services))
