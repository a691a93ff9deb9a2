"""The parameter override engine (new-api's ``param_override``): paths, modes and
conditions as new-api documents them (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest

from faregate import jsonutil
from faregate.errors import GatewayError
from faregate.exchange.param_override import OverrideRefused, apply, compile_override

CONTEXT = {"model": "gpt-4o", "original_model": "fast", "request_headers": {"x-tier": "gold"}}


def run(operations: list[dict[str, Any]], body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    override = compile_override(jsonutil.dumps_str({"operations": operations}))
    assert override is not None
    result = apply(override, body, CONTEXT, headers or {})
    return result.body, result.headers


def test_paths_escapes_negative_indices_and_wildcards() -> None:
    body = {"a.b": 1, "messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "y"}]}
    out, _ = run([{"mode": "set", "path": "a\\.b", "value": 2},
                  {"mode": "set", "path": "messages.-1.content", "value": "last"},
                  {"mode": "set", "path": "messages.*.name", "value": "n"},
                  {"mode": "set", "path": "new.list.2", "value": True}], body)
    assert out["a.b"] == 2 and out["messages"][1]["content"] == "last"
    assert [m["name"] for m in out["messages"]] == ["n", "n"]
    assert out["new"] == {"list": [None, None, True]}


def test_string_modes() -> None:
    body = {"s": "  Hello World  ", "p": "model-x", "q": "x", "r": "aaa"}
    out, _ = run([{"mode": "trim_space", "path": "s"}, {"mode": "to_lower", "path": "s"},
                  {"mode": "trim_prefix", "path": "p", "value": "model-"},
                  {"mode": "ensure_prefix", "path": "q", "value": "pre-"},
                  {"mode": "ensure_suffix", "path": "q", "value": "-suf"},
                  {"mode": "ensure_suffix", "path": "q", "value": "-suf"},
                  {"mode": "replace", "path": "r", "from": "a", "to": "b"},
                  {"mode": "regex_replace", "path": "s", "from": "(\\w+) (\\w+)", "to": "${2} $1"}], body)
    assert out == {"s": "world hello", "p": "x", "q": "pre-x-suf", "r": "bbb"}


def test_move_copy_merge_and_keep_origin() -> None:
    body = {"system": "s", "meta": {"a": 1}, "tags": ["b"]}
    out, _ = run([{"mode": "move", "from": "system", "to": "instructions"},
                  {"mode": "copy", "from": "instructions", "to": "meta.copy"},
                  {"mode": "append", "path": "meta", "value": {"a": 9, "c": 3}, "keep_origin": True},
                  {"mode": "prepend", "path": "tags", "value": "a"},
                  {"mode": "set", "path": "meta.a", "value": 5, "keep_origin": True}], body)
    assert out == {"instructions": "s", "meta": {"a": 1, "copy": "s", "c": 3}, "tags": ["a", "b"]}


def test_conditions() -> None:
    body = {"n": 5, "flag": True}
    out, _ = run([{"mode": "set", "path": "or", "value": 1,  # OR by default: one is enough
                   "conditions": [{"path": "n", "mode": "gt", "value": 10}, {"path": "flag", "mode": "full",
                                                                              "value": True}]},
                  {"mode": "set", "path": "and", "value": 1, "logic": "AND",
                   "conditions": [{"path": "n", "mode": "gt", "value": 10}, {"path": "flag", "value": True}]},
                  {"mode": "set", "path": "missing", "value": 1,
                   "conditions": [{"path": "nope", "mode": "full", "value": 1, "pass_missing_key": True}]},
                  {"mode": "set", "path": "inverted", "value": 1,
                   "conditions": [{"path": "model", "mode": "prefix", "value": "claude", "invert": True}]},
                  {"mode": "set", "path": "header", "value": 1, "conditions": {"request_headers.x-tier": "gold"}},
                  {"mode": "set", "path": "typed", "value": 1, "conditions": [{"path": "n", "value": "5"}]}], body)
    assert set(out) - {"n", "flag"} == {"or", "missing", "inverted", "header"}


def test_prune_objects_and_headers() -> None:
    body = {"tools": [{"type": "web_search"}, {"type": "function", "name": "f"}], "x": {"type": "web_search"}}
    out, headers = run([{"mode": "prune_objects", "path": "", "value": "web_search"},
                        {"mode": "set_header", "path": "X-A", "value": "1"},
                        {"mode": "pass_headers", "value": "X-Trace"},
                        {"mode": "move_header", "from": "X-Old", "to": "X-New"},
                        {"mode": "delete_header", "path": "X-Gone"}], body, {"x-trace": "t", "x-old": "o"})
    assert out == {"tools": [{"type": "function", "name": "f"}]}
    assert headers == {"x-a": "1", "x-trace": "t", "x-new": "o", "x-old": None, "x-gone": None}


def test_failures() -> None:
    with pytest.raises(OverrideRefused) as refused:
        run([{"mode": "return_error", "value": "no"}], {})
    assert (refused.value.status, refused.value.retry) == (400, False)
    with pytest.raises(GatewayError) as failed:
        run([{"mode": "move", "from": "absent", "to": "b"}], {})
    assert failed.value.code == "channel:param_override_invalid"
    with pytest.raises(GatewayError):
        run([{"mode": "to_upper", "path": "n"}], {"n": 1})
    with pytest.raises(GatewayError):
        run([{"mode": "set", "path": "l.5000", "value": 1}], {"l": []})  # no giant arrays


def test_the_legacy_form_and_empty_overrides() -> None:
    assert compile_override("") is None and compile_override("{}") is None
    override = compile_override('{"temperature": 0.5, "nested": {"a": 1}}')
    assert override is not None
    body = {"temperature": 1, "model": "m"}
    assert apply(override, body, {}, {}).body == {"temperature": 0.5, "nested": {"a": 1}, "model": "m"}
    with pytest.raises(ValueError, match="JSON object"):
        compile_override("[1]")
