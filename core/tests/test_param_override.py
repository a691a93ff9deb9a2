"""The parameter override engine (new-api's ``param_override``): paths, modes and
conditions as new-api documents them (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest

from faregate import jsonutil
from faregate.errors import GatewayError
from faregate.overrides.params import OverrideRefused, apply, compile_override

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


# -- new-api's sync_fields, header values and the mixed form -----------------------------------
def test_sync_fields_fills_whichever_side_is_missing() -> None:
    sync = [{"mode": "sync_fields", "from": "header:Session_id", "to": "json:prompt_cache_key"}]
    out, headers = run(sync, {"model": "m"}, {"session_id": "sess-1"})  # the caller's header → the body
    assert out == {"model": "m", "prompt_cache_key": "sess-1"} and headers == {}
    out, headers = run(sync, {"prompt_cache_key": "cache-abc"})  # the body → a header
    assert out == {"prompt_cache_key": "cache-abc"} and headers == {"session_id": "cache-abc"}
    out, headers = run(sync, {"prompt_cache_key": "body"}, {"session_id": "header"})  # both: unchanged
    assert out == {"prompt_cache_key": "body"} and headers == {}
    assert run(sync, {"prompt_cache_key": "  "}) == ({"prompt_cache_key": "  "}, {})  # blank is missing: neither
    # bare paths and body: are body paths; a header set by an earlier operation is read
    out, _ = run([{"mode": "set_header", "path": "X-Req", "value": "r-1"},
                  {"mode": "sync_fields", "from": "body:metadata.request_id", "to": "header:x-req"},
                  {"mode": "sync_fields", "from": "user", "to": "metadata.user"}], {"user": "u"})
    assert out == {"user": "u", "metadata": {"request_id": "r-1", "user": "u"}}


def test_sync_fields_puts_only_a_header_value_in_a_header() -> None:
    sync = [{"mode": "sync_fields", "from": "json:v", "to": "header:x-v"}]
    assert run(sync, {"v": 7})[1] == {"x-v": "7"} and run(sync, {"v": True})[1] == {"x-v": "true"}
    for unfit in ({"v": "a\r\nInjected: 1"}, {"v": {"nested": 1}}, {"v": "x" * 10_000}):
        assert run(sync, unfit)[1] == {}, unfit  # the caller's text never splits or floods a header


@pytest.mark.parametrize(("operation", "error"), [
    ({"mode": "sync_fields", "from": "header:session_id"}, "from and to are required"),
    ({"mode": "sync_fields", "from": "foo:session_id", "to": "json:k"}, "must start with json:, body: or header:"),
    ({"mode": "sync_fields", "from": "header:", "to": "json:k"}, "names no field"),
    ({"mode": "sync_fields", "from": "header:Authorization", "to": "json:k"}, "never sent upstream"),
    ({"mode": "sync_fields", "from": "json:k", "to": "header:Host"}, "cannot be changed"),
    ({"mode": "set_header", "path": "X-A", "value": "{client_header:X-Api-Key}"}, "never sent upstream"),
    ({"mode": "set_header", "path": "X-A", "value": "id {client_header:X-B}"}, "must be the whole value"),
    ({"mode": "set_header", "path": "X-A", "value": {"a,b": "c"}}, "without a comma"),
    ({"mode": "set_header", "path": "X-A", "value": {}}, "1 to 100 entries"),
    ({"mode": "set_header", "path": "X-A", "value": {"$keep_only_declared": "yes", "a": "b"}}, "true or false"),
])
def test_bad_sync_and_header_values_are_refused_on_save(operation: dict[str, Any], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        compile_override(jsonutil.dumps_str({"operations": [operation]}))


def test_set_header_placeholders() -> None:
    override = compile_override(jsonutil.dumps_str({"operations": [
        {"mode": "set_header", "path": "Authorization", "value": "Bearer {api_key}"},
        {"mode": "set_header", "path": "X-Trace", "value": "{client_header:X-Request-Id}"},
        {"mode": "set_header", "path": "X-Absent", "value": "{client_header:X-Nothing}"}]}))
    assert override is not None
    result = apply(override, {}, CONTEXT, {"x-request-id": "req-9"}, "sk-channel-key")
    assert result.headers == {"authorization": "Bearer sk-channel-key", "x-trace": "req-9"}


def test_set_header_token_maps() -> None:
    beta = "advanced-tool-use-2025-11-20, computer-use-2025-01-24"
    _, headers = run([{"mode": "set_header", "path": "anthropic-beta", "value": {
        "advanced-tool-use-2025-11-20": None, "computer-use-2025-01-24": "computer-use-2025-01-24"}}],
        {}, {"anthropic-beta": beta})
    assert headers == {"anthropic-beta": "computer-use-2025-01-24"}
    _, headers = run([{"mode": "set_header", "path": "anthropic-beta", "value": {
        "advanced-tool-use-2025-11-20": None, "computer-use-2025-01-24": None}}], {}, {"anthropic-beta": beta})
    assert headers == {"anthropic-beta": None}  # no token left: the header goes
    _, headers = run([{"mode": "set_header", "path": "anthropic-beta",
                       "value": {"$append": ["context-1m-2025-08-07", "computer-use-2025-01-24"]}}],
                     {}, {"anthropic-beta": "computer-use-2025-01-24"})
    assert headers == {"anthropic-beta": "computer-use-2025-01-24,context-1m-2025-08-07"}
    _, headers = run([{"mode": "set_header", "path": "x-feat", "value": {"$append": "a,b"}}], {})
    assert headers == {"x-feat": "a,b"}  # made when the caller sent none
    _, headers = run([{"mode": "set_header", "path": "x-feat", "value": {
        "keep": "keep", "$append": ["new"], "$keep_only_declared": True}}], {}, {"x-feat": "drop, keep"})
    assert headers == {"x-feat": "keep,new"}
    _, headers = run([{"mode": "set_header", "path": "x-feat", "value": {"*": "other", "a": ["b", "c"]}}],
                     {}, {"x-feat": "a,z,y"})
    assert headers == {"x-feat": "b,c,other"}
    assert run([{"mode": "set_header", "path": "x-none", "value": {"a": "b"}}], {}) == ({}, {})


def test_plain_fields_beside_operations_merge_first() -> None:
    """new-api's mixed form: the plain fields are merged, then the operations run (and win)."""
    override = compile_override('{"temperature": 0.2, "model": "legacy", '
                                '"operations": [{"mode": "set", "path": "model", "value": "op"}]}')
    assert override is not None
    assert apply(override, {"model": "m", "temperature": 0.7}, {}, {}).body == {"model": "op", "temperature": 0.2}
