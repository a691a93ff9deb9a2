"""The built-in price tables (new-api's, shipped as data) and new-api's rules for finding a
model in them: matching names (custom GPTs, Gemini thinking budgets), family completion ratios,
cache ratio defaults, and an option that replaces its whole table."""

from __future__ import annotations

from importlib.resources import files

import pytest

from faregate import jsonutil
from faregate.billing import ratios
from faregate.default_plugins.options import CORE_REGISTRY, core_options


def test_the_tables_are_data_with_their_provenance() -> None:
    document = jsonutil.loads((files("faregate.billing") / "default_prices.json").read_bytes())
    assert "QuantumNous/new-api" in " ".join(document["provenance"])
    for option in ratios.TABLES:  # each table is its option's default, and passes the option's own check
        default = CORE_REGISTRY.defaults()[option]
        assert jsonutil.loads(default) == document[option] == CORE_REGISTRY.specs[option].parse(default)
    model_ratio = ratios.default_table("ModelRatio")
    assert len(model_ratio) > 200  # new-api's table, not a handful
    # a few of new-api's entries, as its model_ratio.go writes them ($ per million input / 2)
    assert (model_ratio["gpt-4o-2024-08-06"], model_ratio["o1-pro"], model_ratio["claude-3-haiku-20240307"],
            model_ratio["deepseek-chat"], model_ratio["gpt-4-gizmo-*"]) == (1.25, 75, 0.125, 0.27 / 2, 15)
    assert model_ratio["ERNIE-4.0-8K"] == pytest.approx(0.120 * 500 / 7.3)  # RMB at new-api's 7.3
    cache, create = ratios.default_table("CacheRatio"), ratios.default_table("CreateCacheRatio")
    assert (cache["gpt-4o"], cache["gpt-4.1"], cache["claude-sonnet-4-5-20250929"]) == (0.5, 0.25, 0.1)
    assert create["claude-sonnet-4-5-20250929"] == 1.25
    assert set(cache) <= set(model_ratio) | set(ratios.default_table("ModelPrice"))


@pytest.mark.parametrize(("model", "matched"), [
    ("gpt-4-gizmo-g-2fkFE8rbu", "gpt-4-gizmo-*"),
    ("gpt-4o-gizmo-g-abc", "gpt-4o-gizmo-*"),
    ("gemini-2.5-flash-thinking-512", "gemini-2.5-flash-thinking-*"),
    ("gemini-2.5-pro-thinking-128", "gemini-2.5-pro-thinking-*"),
    ("gemini-2.5-flash-lite-thinking-24", "gemini-2.5-flash-lite-thinking-*"),
    ("gemini-2.5-flash", "gemini-2.5-flash"),
    ("gemini-2.5-flash-preview-05-20-thinking", "gemini-2.5-flash-preview-05-20-thinking"),  # no budget
    ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06"),
])
def test_matching_names(model: str, matched: str) -> None:
    assert ratios.matching_name(model) == matched


@pytest.mark.parametrize(("name", "ratio"), [
    ("gpt-4o-2024-11-20", 4), ("gpt-4o-2024-05-13", 3), ("gpt-4o-mini-tts-2025", 20), ("gpt-5-mini", 8),
    ("gpt-5.2", 6), ("gpt-5.4-nano", 6.25), ("gpt-4.5-preview", 2), ("gpt-4-turbo-2024-04-09", 3),
    ("gpt-4-0613", 2), ("gpt-3.5-turbo-0125", 3), ("gpt-3.5-turbo-1106", 2), ("gpt-3.5-turbo-16k", 4 / 3),
    ("o1-preview", 4), ("o3-pro", 4), ("chatgpt-4o-latest", 3), ("gpt-4-all", 2), ("gpt-4o-gizmo-*", 2),
    ("claude-3-5-sonnet-20241022", 5), ("claude-opus-4-1-20250805", 5), ("anthropic.claude-haiku-4-5", 5),
    ("mistral-large", 3), ("gemini-1.5-pro", 4), ("gemini-2.5-pro-preview-06-05", 8),
    ("gemini-2.5-flash-preview-05-20", 3.5 / 0.15), ("gemini-2.5-flash-preview-05-20-nothinking", 4),
    ("gemini-2.5-flash-lite", 4), ("gemini-2.5-flash", 2.5 / 0.3), ("gemini-3-pro-image-preview", 60),
    ("gemini-3-pro-preview", 6), ("gemini-embedding-001", 4), ("command-r", 3), ("command-r-plus", 5),
    ("command-a", 4), ("ERNIE-Speed-8K", 2), ("llama3-70b-8192", 0.79 / 0.59), ("deepseek-chat", 1),
])
def test_family_completion_ratios(name: str, ratio: float) -> None:
    assert ratios.family_completion_ratio(name) == pytest.approx(ratio)


def test_lookups_as_new_api() -> None:
    built_in = core_options({})
    assert built_in.ratio_of("gpt-4o-2024-08-06") == 1.25 and built_in.ratio_of("made-up-model") is None
    assert built_in.price_of("gpt-4-gizmo-g-1") == 0.1 and built_in.ratio_of("gpt-4-gizmo-g-1") == 15
    assert built_in.ratio_of("gemini-2.5-pro-thinking-2048") == 0.625
    assert built_in.completion_ratio_of("gpt-4o-2024-08-06") == 4  # no entry: the family's
    assert built_in.completion_ratio_of("gpt-4.1") == 4  # the table's entry over the family's 2
    assert built_in.completion_ratio_of("gpt-4o-gizmo-g-1") == 3  # by the matching name
    assert (built_in.cache_ratio_of("gpt-4o"), built_in.cache_ratio_of("made-up-model")) == (0.5, 1)
    assert (built_in.create_cache_ratio_of("claude-opus-4-20250514"), built_in.create_cache_ratio_of("x")) == (
        1.25, 1.25)
    assert built_in.audio_completion_ratio_of("gpt-realtime") == 2
    # an admin's value is the whole table (new-api replaces the map): built-in entries it leaves out are gone
    mine = core_options({"ModelRatio": '{"gpt-4o": 2}', "CompletionRatio": '{"claude-3-haiku-20240307": 3}',
                    "CacheRatio": "{}", "CreateCacheRatio": '{"claude-3-haiku-20240307": 2}'})
    assert mine.ratio_of("gpt-4o") == 2 and mine.ratio_of("gpt-4o-2024-08-06") is None
    assert mine.completion_ratio_of("claude-3-haiku-20240307") == 3  # the admin's entry over the family's 5
    assert mine.completion_ratio_of("gpt-4.1") == 2  # the built-in entry gone: the family's
    assert mine.cache_ratio_of("gpt-4o") == 1 and mine.create_cache_ratio_of("claude-3-haiku-20240307") == 2
    assert mine.price_of("dall-e-3") == 0.04  # other tables keep their defaults


def test_the_openai_plugins_own_lookups_match_names_too() -> None:
    """The compaction pricer and the audio per-minute rule find a model's price as the default
    pricer does, by its matching name: a custom GPT's compaction pays ``gpt-4-gizmo-*``'s price and
    a thinking budget's its family's ratio before the ``*-openai-compact`` wildcard (new-api's
    GetModelPrice / GetModelRatio), and a transcription model priced by its matching name is billed
    per minute."""
    from types import SimpleNamespace
    from typing import Any

    from faregate_adapter_openai import audio_billing
    from faregate_adapter_openai.responses_api.compact import CompactPricer

    options = core_options({"ModelPrice": '{"gpt-4-gizmo-*": 0.1, "*-openai-compact": 0.02}',
                       "ModelRatio": '{"gemini-2.5-pro-thinking-*": 0.625, "*-openai-compact": 3}'})
    pricer = CompactPricer(SimpleNamespace(options=options))  # type: ignore[arg-type]

    def compaction(model: str) -> Any:
        principal = SimpleNamespace(group="default", user=SimpleNamespace(group="default"))
        return pricer.price(SimpleNamespace(model=model, principal=principal), None)  # type: ignore[arg-type]

    assert compaction("gpt-4-gizmo-g-1-openai-compact") is None  # the default pricer's: gpt-4-gizmo-*'s price
    assert options.price_of("gpt-4-gizmo-g-1-openai-compact") == 0.1
    assert compaction("gemini-2.5-pro-thinking-128-openai-compact") is None  # its family's ratio, no wildcard
    assert compaction("gpt-5-openai-compact").model_price == 0.02  # unpriced itself: the wildcard's
    built_in = SimpleNamespace(options=core_options({}))
    assert audio_billing.per_minute(built_in, "gpt-4-gizmo-g-1")  # type: ignore[arg-type]
    assert not audio_billing.per_minute(built_in, "gpt-4o-transcribe")  # type: ignore[arg-type]  # by tokens


def test_a_price_is_found_once_per_options_snapshot() -> None:
    from faregate.billing.model_prices import options_price

    built_in = core_options({})
    first = options_price(built_in, "gpt-4o", 1.0)
    assert first is not None and first.model_ratio == 1.25
    assert options_price(built_in, "gpt-4o", 1.0) is first  # kept: no lookups per request
    assert options_price(built_in, "gpt-4o", 2.0) is not first  # by group ratio too
    changed = core_options({"ModelRatio": '{"gpt-4o": 2}'})  # a change is a new snapshot
    price = options_price(changed, "gpt-4o", 1.0)
    assert price is not None and price.model_ratio == 2
    assert options_price(built_in, "made-up-model", 1.0) is None
