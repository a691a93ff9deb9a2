"""A model's price from the options, as new-api finds it: its ``ModelPrice`` per call, else its
ratios (``ModelRatio``, ``CompletionRatio``, ``CacheRatio`` …, each by new-api's matching name),
with the group ratio the caller pays. Read from the snapshot's options: no database round trip."""

from __future__ import annotations

from faregate.billing.options import BillingOptions
from faregate.billing.pricing import Price

#: new-api's ratio of a model without a price in self-use mode (SelfUseModeEnabled)
SELF_USE_RATIO = 37.5


#: prices kept per options snapshot at most (a new snapshot starts afresh)
MAX_KEPT_PRICES = 1024


def options_price(options: BillingOptions, model: str, group_ratio: float) -> Price | None:
    """The price of ``model``; None when the options price it neither way and the site is not in
    self-use mode (new-api refuses such a model). Found once per options snapshot, model and
    group ratio (seven table lookups by matching name per request before): a price is
    immutable, and the options it is read from are replaced, never changed."""
    key = (model, group_ratio)
    kept = options.prices
    if key in kept:
        return kept[key]
    price = _options_price(options, model, group_ratio)
    if len(kept) < MAX_KEPT_PRICES:
        kept[key] = price
    return price


def _options_price(options: BillingOptions, model: str, group_ratio: float) -> Price | None:
    fixed = options.price_of(model)
    if fixed is not None:
        return Price(model_price=float(fixed), group_ratio=group_ratio, quota_per_unit=options.quota_per_unit)
    ratio = options.ratio_of(model)
    if ratio is None:
        if not options.self_use_mode:
            return None
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
