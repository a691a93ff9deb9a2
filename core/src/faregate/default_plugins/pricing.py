"""The default pricer: new-api's ratios from the options table (ModelRatio,
CompletionRatio, CacheRatio, CreateCacheRatio, ModelPrice, GroupRatio)."""

from __future__ import annotations

from typing import Any

import pluggy

from faregate.billing.pricing import Price
from faregate.canonical import Usage
from faregate.errors import GatewayError

hookimpl = pluggy.HookimplMarker("faregate")

SELF_USE_RATIO = 37.5


class OptionsPricer:
    def __init__(self) -> None:
        self.gateway = None

    def price(self, ctx: Any, usage: Usage | None) -> Price:
        options = self.gateway.snapshot.options
        model = ctx.model
        group_ratio = float(options.group_ratio.get(ctx.principal.group, 1.0))
        fixed = options.model_price.get(model)
        if fixed is not None:
            return Price(model_price=float(fixed), group_ratio=group_ratio,
                         quota_per_unit=options.quota_per_unit)
        ratio = options.model_ratio.get(model)
        if ratio is None:
            if not options.self_use_mode:
                raise GatewayError(500, f"model {model} has no ratio or price configured",
                                   code="model_price_error")
            ratio = SELF_USE_RATIO
        return Price(
            model_ratio=float(ratio),
            completion_ratio=float(options.completion_ratio.get(model, 1.0)),
            cache_ratio=float(options.cache_ratio.get(model, 1.0)),
            cache_write_ratio=float(options.create_cache_ratio.get(model, 1.25)),
            group_ratio=group_ratio,
            quota_per_unit=options.quota_per_unit,
        )


@hookimpl(trylast=True)
def register_pricers(register):
    register(OptionsPricer())
