"""Prices: new-api's formulas, and the request's own other ratios (images by size,
quality and count; seconds of audio) multiplying both the reservation and the charge; what a
reservation covers (the prompt at four times its estimate, each side at its dearest price)."""

from __future__ import annotations

import pytest

from faregate.billing.pricing import MAX_QUOTA, PROMPT_BOUND_FACTOR, Price, prompt_bound, reserve_quota, usage_quota
from faregate.canonical import Usage
from faregate.tokens import estimator


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


def test_image_input_tokens_at_the_image_ratio() -> None:
    """new-api's ImageRatio: the image part of the input at its own multiple; never more
    image tokens than input (an upstream's inconsistent usage)."""
    price = Price(model_ratio=2.5, completion_ratio=8, image_ratio=2)
    usage = Usage(input_tokens=300, output_tokens=100, image_tokens=200)
    assert usage_quota(price, usage) == round((100 + 200 * 2 + 100 * 8) * 2.5)
    assert usage_quota(Price(model_ratio=2.5, completion_ratio=8), usage) == round((300 + 100 * 8) * 2.5)
    lying = Usage(input_tokens=10, output_tokens=0, image_tokens=10_000)
    assert usage_quota(price, lying) == round(10 * 2 * 2.5)


def test_audio_input_tokens_at_the_audio_ratio() -> None:
    """new-api's audio formula: text in at 1, audio in at AudioRatio, output at the completion ratio."""
    price = Price(model_ratio=1.25, completion_ratio=4, audio_ratio=2.4)
    usage = Usage(input_tokens=52, output_tokens=10, audio_tokens=42)
    assert usage_quota(price, usage) == round((10 + 42 * 2.4 + 10 * 4) * 1.25)
    # audio counts only within the input: an upstream's larger audio figure is capped there
    assert usage_quota(price, Usage(input_tokens=5, audio_tokens=50)) == round(5 * 2.4 * 1.25)


def test_audio_output_tokens_at_the_audio_ratio_times_the_audio_completion_ratio() -> None:
    """new-api's realtime formula (gpt-realtime's list prices: $4 text in, $16 text out, $32 audio
    in, $64 audio out per million): text out at the completion ratio, audio out at AudioRatio ×
    AudioCompletionRatio; cached input at the cache ratio, audio or not."""
    price = Price(model_ratio=2, completion_ratio=4, cache_ratio=0.1, audio_ratio=8, audio_completion_ratio=2)
    usage = Usage(input_tokens=1000, cache_read_tokens=400, audio_tokens=500, output_tokens=300,
                  output_audio_tokens=200)
    text_in, audio_in, cached, text_out, audio_out = 100, 500, 400, 100, 200
    expected = (text_in + audio_in * 8 + cached * 0.1 + text_out * 4 + audio_out * 8 * 2) * 2
    assert usage_quota(price, usage) == round(expected)
    # in dollars: 100 × $4 + 500 × $32 + 400 × $0.40 + 100 × $16 + 200 × $64, per million
    assert usage_quota(price, usage) / 500_000 == pytest.approx((400 + 16_000 + 160 + 1_600 + 12_800) / 1e6)
    # audio output counts only within the output
    assert usage_quota(price, Usage(output_tokens=10, output_audio_tokens=99)) == round(10 * 8 * 2 * 2)


def test_cache_writes_at_the_create_cache_ratio_and_one_hour_writes_higher() -> None:
    """new-api's cache formula with a non-default CreateCacheRatio (2, not 1.25): the input
    without cache reads and writes at 1, reads at CacheRatio, 5-minute writes at CreateCacheRatio,
    one-hour writes at CreateCacheRatio × 1.6 (Anthropic's 2× against 1.25× the input price)."""
    price = Price(model_ratio=1.5, completion_ratio=5, cache_ratio=0.1, cache_write_ratio=2.0)
    usage = Usage(input_tokens=2000, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=600,
                  cache_write_1h_tokens=200)
    fresh, read, write_5m, write_1h, out = 400, 1000, 400, 200, 100
    assert usage_quota(price, usage) == round((fresh + read * 0.1 + write_5m * 2.0 + write_1h * 3.2 + out * 5) * 1.5)
    # the ratio is the one configured: at the default 1.25 the same usage costs less
    assert usage_quota(price, usage) > usage_quota(Price(model_ratio=1.5, completion_ratio=5, cache_ratio=0.1,
                                                         cache_write_ratio=1.25), usage)
    # in dollars, Claude Sonnet's list prices per million ($3 in, $3.75 5-minute write, $6 one-hour
    # write, $0.30 read, $15 out) with CreateCacheRatio 1.25
    sonnet = Price(model_ratio=1.5, completion_ratio=5, cache_ratio=0.1, cache_write_ratio=1.25)
    dollars = (fresh * 3 + read * 0.30 + write_5m * 3.75 + write_1h * 6 + out * 15) / 1e6
    assert usage_quota(sonnet, usage) / 500_000 == pytest.approx(dollars, abs=1e-6)
    # one-hour writes count only within the writes (an upstream's inconsistent usage)
    lying = Usage(input_tokens=100, cache_write_tokens=10, cache_write_1h_tokens=500)
    assert usage_quota(price, lying) == round((90 + 10 * 3.2) * 1.5)


@pytest.mark.parametrize("text", ["plain English text, as most prompts are", "数据库" * 50, "a\u00e9\U0001f600" * 40,
                                  "x" * 4001, "{}()[]" * 33, ""])
def test_four_times_the_estimate_covers_a_token_per_utf8_byte(text: str) -> None:
    """No tokenizer writes more than one token per byte: the bound covers the worst text."""
    assert prompt_bound(estimator.text(text)) == PROMPT_BOUND_FACTOR * estimator.text(text) >= len(text.encode())


def test_a_reservation_prices_each_side_at_its_dearest() -> None:
    """Audio input and output (gpt-4o-audio-preview's kind: audio in at 16 times the text
    price, out at twice that) and image input are reserved at their own prices: a chat request
    with audio could otherwise be billed eight times its reservation."""
    text = Price(model_ratio=1, completion_ratio=4)
    assert reserve_quota(text, 100, 10) == 100 + 10 * 4
    audio = Price(model_ratio=1, completion_ratio=4, audio_ratio=16, audio_completion_ratio=2)
    assert reserve_quota(audio, 100, 10) == 100 * 16 + 10 * 32
    image = Price(model_ratio=1, completion_ratio=4, image_ratio=2)
    assert reserve_quota(image, 100, 10) == 100 * 2 + 10 * 4
