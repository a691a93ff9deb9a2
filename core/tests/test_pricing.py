"""Prices: new-api's formulas, and the request's own other ratios (images by size,
quality and count; seconds of audio) multiplying both the reservation and the charge."""

from __future__ import annotations

import pytest

from faregate.billing.pricing import MAX_QUOTA, Price, reserve_quota, usage_quota
from faregate.canonical import Usage


def test_fixed_price_times_other_ratios() -> None:
    price = Price(model_price=0.04, other_ratios={"n": 2, "size": 1.5})
    assert price.other_ratio == 3.0
    assert reserve_quota(price, 0, 0) == usage_quota(price, None) == round(0.04 * 500_000 * 3)


def test_token_price_times_other_ratios() -> None:
    price = Price(model_ratio=2.5, completion_ratio=4, other_ratios={"quality": 2})
    usage = Usage(input_tokens=100, output_tokens=10)
    assert usage_quota(price, usage) == round((100 + 10 * 4) * 2.5 * 2)
    assert reserve_quota(price, 100, 10) == round((100 + 10 * 4) * 2.5 * 2)


def test_a_zero_ratio_makes_the_request_free_without_the_minimum_charge() -> None:
    price = Price(model_ratio=1, other_ratios={"n": 0})
    assert price.free
    assert usage_quota(price, Usage(input_tokens=1, output_tokens=1)) == 0


def test_no_other_ratios_keeps_new_apis_formula_and_minimum() -> None:
    price = Price(model_ratio=0.001)
    assert price.other_ratio == 1.0 and not price.free
    assert usage_quota(price, Usage(input_tokens=1, output_tokens=0)) == 1  # new-api's minimum charge


@pytest.mark.parametrize("ratio", [1e30, float(2**60)])
def test_absurd_ratios_stop_at_the_quota_ceiling(ratio: float) -> None:
    price = Price(model_price=1.0, other_ratios={"seconds": ratio})
    assert reserve_quota(price, 0, 0) == MAX_QUOTA
    assert usage_quota(price, None) == MAX_QUOTA
