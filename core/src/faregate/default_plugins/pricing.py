"""The default pricer: new-api's ratios from the options table (ModelRatio,
CompletionRatio, CacheRatio, CreateCacheRatio, ImageRatio, AudioRatio, AudioCompletionRatio, ModelPrice,
GroupRatio, GroupGroupRatio), read from the snapshot: no database round trip per request. A model is
found as new-api finds it (its matching name, its family's completion ratio: faregate.billing.ratios)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl

if TYPE_CHECKING:
    from faregate.exchange.policies import Pricer
    from faregate.services import Services


@hookimpl(trylast=True)
def register_pricers(register: Callable[[Pricer], None], services: Services) -> None:
    from faregate.default_plugins.options_pricer import OptionsPricer

    register(OptionsPricer(services))
