"""The output bound of a request that sets none (``ModelMaxOutputTokens``, else
``DefaultMaxTokensReserve``): found by the price tables' matching name, an exact name before
the longest prefix; a stored table replaces the built-in one whole and is checked entry by
entry (a 400 naming it, never stored)."""

from __future__ import annotations

import pytest

from faregate import jsonutil
from faregate.billing.output_limits import DEFAULT_OUTPUT_LIMITS, OutputLimits, parse_output_limits
from faregate.default_plugins.options import CORE_REGISTRY, core_options
from faregate.state.option_specs import OptionError


@pytest.mark.parametrize(("model", "tokens"), [
    ("gpt-4o", 16_384),
    ("gpt-4o-2024-05-13", 4096),  # an exact name before the gpt-4o* prefix
    ("gpt-4o-mini", 16_384),
    ("gpt-4o-realtime-preview-2024-12-17", 4096),  # the longer prefix wins
    ("gpt-5", 128_000),
    ("gpt-5-chat-latest", 16_384),
    ("o1-mini-2024-09-12", 65_536),
    ("o3-mini", 100_000),
    ("claude-sonnet-4-5-20250929", 64_000),
    ("claude-opus-4-1-20250805", 32_000),
    ("claude-3-5-haiku-latest", 8192),
    ("gemini-2.5-flash-thinking-128", 65_536),  # by its matching name, gemini-2.5-flash-thinking-*
    ("deepseek-reasoner", 64_000),
])
def test_built_in_limits(model: str, tokens: int) -> None:
    assert core_options({}).max_output_of(model) == tokens


def test_a_model_the_table_does_not_name_gets_the_default_reserve() -> None:
    assert core_options({}).max_output_of("my-own-model") == 4096
    assert core_options({"DefaultMaxTokensReserve": "1000"}).max_output_of("my-own-model") == 1000
    assert OutputLimits.of(DEFAULT_OUTPUT_LIMITS).limit("my-own-model") is None


def test_a_stored_table_replaces_the_built_in_one() -> None:
    options = core_options({"ModelMaxOutputTokens": jsonutil.dumps_str({"my-*": 2000, "my-model": 300})})
    assert options.max_output_of("my-model") == 300
    assert options.max_output_of("my-other-model") == 2000
    assert options.max_output_of("gpt-4o") == 4096  # no longer named: the default reserve


def test_the_default_table_passes_its_own_check() -> None:
    default = CORE_REGISTRY.defaults()["ModelMaxOutputTokens"]
    assert jsonutil.loads(default) == dict(DEFAULT_OUTPUT_LIMITS)
    assert CORE_REGISTRY.check("ModelMaxOutputTokens", default) == OutputLimits.of(DEFAULT_OUTPUT_LIMITS)


@pytest.mark.parametrize(("value", "named"), [
    ('{"gpt-4o": 0}', "gpt-4o"),
    ('{"gpt-4o": 10000001}', "gpt-4o"),
    ('{"gpt-4o": 1.5}', "gpt-4o"),
    ('{"gpt-4o": true}', "gpt-4o"),
    ('{"gpt-4o": "4096"}', "gpt-4o"),
    ('{"*": 4096}', "names"),
    ('{"": 4096}', "names"),
    ("[4096]", "JSON object"),
    ("not json", "JSON object"),
])
def test_a_bad_table_is_refused_naming_the_entry(value: str, named: str) -> None:
    with pytest.raises(OptionError) as refused:
        CORE_REGISTRY.check("ModelMaxOutputTokens", value)
    assert "ModelMaxOutputTokens" in str(refused.value) and named in str(refused.value)
    assert parse_output_limits(" ").limit("gpt-4o") is None  # an empty value: an empty table


def test_a_bad_stored_table_falls_back_to_the_built_in_one() -> None:
    assert core_options({"ModelMaxOutputTokens": '{"gpt-4o": -1}'}).max_output_of("gpt-4o") == 16_384
