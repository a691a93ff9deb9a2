"""Prices in new-api's units: 500,000 quota = $1; model ratio 1 = $2 per 1M input
tokens, so one input token costs ``model_ratio`` quota before group ratios."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from faregate.canonical import Usage
from faregate.contracts.values import no_ratios


@dataclass(slots=True, frozen=True)
class Price:
    model_ratio: float = 0.0
    completion_ratio: float = 1.0
    cache_ratio: float = 1.0  # cached input reads, relative to input
    cache_write_ratio: float = 1.0  # cache creation, relative to input (one-hour writes: × CACHE_WRITE_1H_MULTIPLIER)
    image_ratio: float = 1.0  # image input tokens (new-api's ImageRatio), relative to input
    audio_ratio: float = 1.0  # audio input tokens (new-api's AudioRatio), relative to input
    #: audio output tokens cost ``audio_ratio`` × this, relative to input (new-api's AudioCompletionRatio)
    audio_completion_ratio: float = 1.0
    group_ratio: float = 1.0
    model_price: float | None = None  # fixed USD per call; replaces token pricing
    quota_per_unit: float = 500_000
    #: new-api's "other ratios": what the request itself multiplies the price by (images
    #: and their size, quality and count; seconds of audio …), by name, for the log
    other_ratios: Mapping[str, float] = field(default_factory=no_ratios)

    @property
    def other_ratio(self) -> float:
        product = 1.0
        for ratio in self.other_ratios.values():
            product *= ratio
        return product

    @property
    def free(self) -> bool:
        if self.other_ratio == 0:
            return True
        if self.model_price is not None:
            return self.model_price == 0 or self.group_ratio == 0
        return self.model_ratio == 0 or self.group_ratio == 0


#: a one-hour cache write costs this many times a five-minute one (Anthropic's list prices: 2× and
#: 1.25× the input price; new-api's claudeCacheCreation1hMultiplier, 6 / 3.75)
CACHE_WRITE_1H_MULTIPLIER = 6 / 3.75

#: no reservation or charge beyond this (a 63-bit column with room to spare): prices and
#: budgets that multiply past it are refused as not affordable rather than overflowing
MAX_QUOTA = 2**53


#: no tokenizer writes more than one token per UTF-8 byte of text (a byte-level BPE token, or a
#: byte fallback, covers at least one byte), and the estimator counts at least one token per four
#: bytes (:mod:`faregate.tokens`): four times its estimate bounds what an upstream can bill for the
#: text a format counted. Images and audio, estimated by their formats' rules, get the same factor.
PROMPT_BOUND_FACTOR = 4


def prompt_bound(estimate: int) -> int:
    """The prompt tokens a reservation covers for a prompt the formats estimate at ``estimate``."""
    return estimate * PROMPT_BOUND_FACTOR


def reserve_quota(price: Price, prompt_tokens: int, max_output: int) -> int:
    """The most this request can cost: ``prompt_tokens`` (a bound: :func:`prompt_bound`) at the
    dearest input price they may be billed at (text, image or audio input), plus the whole
    output bound ``max_output`` at the dearest output price (text or audio), at most
    :data:`MAX_QUOTA`. A cache write's premium over the input price is not reserved."""
    if price.model_price is not None:
        cost = price.model_price * price.quota_per_unit * price.group_ratio
    else:
        input_price = max(1.0, price.image_ratio, price.audio_ratio)
        output_price = max(price.completion_ratio, price.audio_ratio * price.audio_completion_ratio)
        cost = (prompt_tokens * input_price + max_output * output_price) * price.model_ratio * price.group_ratio
    return math.ceil(min(cost * price.other_ratio, MAX_QUOTA))


def usage_quota(price: Price, usage: Usage | None) -> int:
    """What a finished request costs (new-api's text quota formula)."""
    if price.model_price is not None:
        return round(min(price.model_price * price.quota_per_unit * price.group_ratio * price.other_ratio, MAX_QUOTA))
    if usage is None or usage.total_tokens == 0:
        return 0
    base_input = max(0, usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens)
    image_input = min(usage.image_tokens, base_input)  # part of the input, priced on its own
    audio_input = min(usage.audio_tokens, base_input - image_input)  # the same for audio
    audio_output = min(usage.output_audio_tokens, usage.output_tokens)  # part of the output, priced as new-api
    write_1h = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)  # part of the writes, priced higher
    weighted = (
        base_input - image_input - audio_input
        + image_input * price.image_ratio
        + audio_input * price.audio_ratio
        + usage.cache_read_tokens * price.cache_ratio
        + (usage.cache_write_tokens - write_1h) * price.cache_write_ratio
        + write_1h * price.cache_write_ratio * CACHE_WRITE_1H_MULTIPLIER
        + (usage.output_tokens - audio_output) * price.completion_ratio
        + audio_output * price.audio_ratio * price.audio_completion_ratio
    )
    # min(): an upstream's absurd usage
    quota = round(min(weighted * price.model_ratio * price.group_ratio * price.other_ratio, MAX_QUOTA))
    if quota <= 0 and price.model_ratio > 0 and price.group_ratio > 0 and price.other_ratio > 0:
        return 1  # new-api's minimum charge
    return quota


def estimate_tokens(chars: int) -> int:
    """A cheap prompt estimate used only for the reservation (~4 chars per token,
    rounded up so the reservation errs high)."""
    return chars // 3 + 1
