"""The Responses format's pure parts: request checks and what needs OpenAI, Responses →
canonical, canonical → Response objects and event streams (checked against OpenAI's
schema and the SDK's types), the native pass-through's readers, compaction's model and
price."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response

from faregate.api import (
    ChatResponse,
    GatewayError,
    ImagePart,
    Message,
    ReasoningDelta,
    ReasoningPart,
    StreamStart,
    StreamStop,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolResultPart,
    Usage,
    json_dumps,
    json_loads,
)
from faregate_adapter_openai.responses_api import compact, render, requests
from faregate_adapter_openai.responses_api.native import NATIVE, ResponsesPassthrough
from faregate_adapter_openai.responses_api.stream import ResponsesStreamEncoder
from faregate_adapter_openai.responses_api.summary import ResponsesSummary, summarize
from faregate_adapter_openai.testing.schema import validate

FN = {"type": "function", "name": "lookup", "description": "Look it up", "strict": True,
      "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}


def sse_events(data: bytes) -> list[dict[str, Any]]:
    events = []
    for block in data.decode().split("\n\n"):
        if not block:
            continue
        kind, payload = block.split("\n")
        event = json_loads(payload.removeprefix("data: "))
        assert kind == f"event: {event['type']}"
        events.append(event)
    return events


# ---- summary: checks and what needs OpenAI -----------------------------------------------------


@pytest.mark.parametrize(("extra", "needs"), [
    ({}, None),
    ({"tools": [FN], "tool_choice": {"type": "function", "name": "lookup"}}, None),
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"conversation": {"id": "conv_1"}}, "conversation"),
    ({"prompt": {"id": "pmpt_1"}}, "prompt"),
    ({"background": True, "stream": True}, "background"),
    ({"tools": [FN, {"type": "file_search", "vector_store_ids": ["vs_1"]}]}, "tools"),
    ({"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}}, "tool_choice"),
    ({"input": [{"type": "web_search_call", "id": "ws_1", "status": "completed"}]}, "input"),
    ({"input": [{"id": "msg_1"}]}, "input"),  # an item reference without its type
    ({"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "file_1", "detail": "auto"}]}]},
     "input"),
])
def test_what_needs_openai(extra: dict[str, Any], needs: str | None) -> None:
    summary = summarize({"model": "m", "input": "hi", **extra})
    assert isinstance(summary, ResponsesSummary) and summary.native_only == needs
    if needs is None:
        requests.parse_request(summary.params, "m")  # convertible: converts
    else:
        with pytest.raises(GatewayError) as info:
            requests.parse_request(summary.params, "m")
        assert info.value.status == 400 and (info.value.param or "").startswith(needs)


def test_summary_reads_stream_limit_and_estimate() -> None:
    small = summarize({"model": "m", "input": "hi"})
    big = summarize({"model": "m", "input": [{"role": "user", "content": "word " * 400}], "instructions": "be kind",
                     "tools": [FN], "stream": True, "max_output_tokens": 64})
    assert (small.stream, small.max_tokens) == (False, None)
    assert (big.stream, big.max_tokens, big.include_usage) == (True, 64, True)
    assert big.prompt_tokens > small.prompt_tokens + 400


@pytest.mark.parametrize(("body", "param"), [
    # lists and objects where a name is expected are refused, never hashed
    ({"input": [{"role": ["user"], "content": "x"}]}, "input[0].role"),
    ({"input": "x", "reasoning": {"effort": ["high"]}}, "reasoning.effort"),
    ({"input": "x", "reasoning": {"summary": {"a": 1}}}, "reasoning.summary"),
    ({"input": "x", "text": {"verbosity": ["low"]}}, "text.verbosity"),
    ({"input": "x", "text": {"format": {"type": ["json_object"]}}}, "text.format"),
    ({"input": "x", "truncation": ["auto"]}, "truncation"),
    ({"input": [{"type": "reasoning", "summary": []}]}, "input[0].id"),
    ({"input": [{"type": "function_call", "id": None, "call_id": "c", "name": "f", "arguments": "{}"}]},
     "input[0].id"),
])
def test_odd_values_are_a_400_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(GatewayError) as info:
        summarize({"model": "m", **body})
    assert (info.value.status, info.value.param) == (400, param)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.dictionaries(st.sampled_from(["model", "input", "instructions", "tools", "tool_choice", "text",
                                             "reasoning", "metadata", "max_output_tokens", "temperature", "stream",
                                             "parallel_tool_calls", "user", "truncation"]),
                            st.recursive(st.none() | st.booleans() | st.integers(-5, 100) | st.text(max_size=8),
                                         lambda inner: st.lists(inner, max_size=3)
                                         | st.dictionaries(st.sampled_from(["type", "role", "content", "name",
                                                                            "text", "format", "effort", "call_id",
                                                                            "arguments", "output", "summary"]),
                                                           inner, max_size=4), max_leaves=12)))
def test_any_body_is_summarized_or_refused_and_convertible_ones_convert(body: dict[str, Any]) -> None:
    try:
        summary = summarize(body)
    except GatewayError as err:
        assert err.status == 400 and err.param
        return
    assert isinstance(summary, ResponsesSummary)
    if summary.native_only is None:
        requests.parse_request(body, summary.model)


# ---- Responses → canonical ----------------------------------------------------------------------


def test_a_conversation_converts() -> None:
    body = {
        "model": "m", "instructions": "Be brief.", "stream": True, "max_output_tokens": 300, "temperature": 0.3,
        "top_p": 0.9, "user": "u-1", "safety_identifier": "safe-1", "parallel_tool_calls": False,
        "tools": [FN], "tool_choice": {"type": "function", "name": "lookup"},
        "reasoning": {"effort": "high", "summary": "auto"},
        "text": {"format": {"type": "json_schema", "name": "Out", "schema": {"type": "object"}, "strict": True}},
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "look"},
                                         {"type": "input_image", "image_url": "data:image/png;base64,AAAA",
                                          "detail": "high"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "hmm"}],
             "encrypted_content": "sig_1"},
            {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "redacted_blob"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "let me see", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup", "arguments": '{"q":"x"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "found"},
            {"role": "developer", "content": "now answer"},
        ],
    }
    req = requests.parse_request(body, "mapped")
    assert req.model == "mapped" and req.stream and (req.max_tokens, req.temperature, req.top_p) == (300, 0.3, 0.9)
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool", "developer"]
    assert req.messages[0].content == [TextPart("Be brief.")]
    assert req.messages[1].content == [TextPart("look"), ImagePart(data="AAAA", media_type="image/png", detail="high")]
    assert req.messages[2].content == [ReasoningPart(text="hmm", signature="sig_1"),
                                       ReasoningPart(redacted="redacted_blob"), TextPart("let me see"),
                                       ToolCallPart("call_1", "lookup", '{"q":"x"}')]
    assert req.messages[3].content == [ToolResultPart("call_1", [TextPart("found")])]
    assert req.tools[0].name == "lookup" and req.tools[0].strict is True
    assert req.tool_choice is not None and (req.tool_choice.mode, req.tool_choice.name,
                                            req.tool_choice.parallel) == ("tool", "lookup", False)
    assert req.reasoning is not None and (req.reasoning.enabled, req.reasoning.effort) == (True, "high")
    assert req.response_format == {"type": "json_schema",
                                   "json_schema": {"name": "Out", "schema": {"type": "object"}, "strict": True}}
    assert req.user == "safe-1" and req.extra == {}


def test_small_forms_convert() -> None:
    req = requests.parse_request({"input": "hi", "reasoning": {"effort": "none"}, "tool_choice": "required",
                                  "text": {"format": {"type": "json_object"}}}, "m")
    assert req.messages == [Message("user", [TextPart("hi")])]
    assert req.reasoning is not None and not req.reasoning.enabled
    assert req.tool_choice is not None and req.tool_choice.mode == "required"
    assert req.response_format == {"type": "json_object"}
    assert requests.response_format({"format": {"type": "text"}}) is None


# ---- canonical → Response objects ----------------------------------------------------------------


@pytest.mark.parametrize(("stop", "status", "reason"), [
    ("stop", "completed", None), ("tool_calls", "completed", None), ("length", "incomplete", "max_output_tokens"),
    ("content_filter", "incomplete", "content_filter"), ("error", "failed", None)])
def test_a_converted_answer_renders_as_a_valid_response(stop: Any, status: str, reason: str | None) -> None:
    answer = ChatResponse(id="chatcmpl-1", model="up", stop_reason=stop, created=1700000000,
                          usage=Usage(input_tokens=50, output_tokens=20, cache_read_tokens=10, reasoning_tokens=5),
                          message=Message("assistant", [ReasoningPart(text="why", signature="sig"),
                                                        TextPart("Hello "), TextPart("there"),
                                                        ToolCallPart("call_9", "lookup", '{"q":1}')]))
    params = {"model": "client-model", "instructions": "x", "tools": [{"type": "function", "name": "lookup"}],
              "metadata": {"a": "b"}, "user": "u", "max_output_tokens": 100}
    obj = render.render_response(answer, "client-model", params)
    validate("Response", obj)
    resp = Response.model_validate(obj)  # the SDK's own types, as strict clients check them
    assert (resp.status, resp.id, resp.model) == (status, "resp_chatcmpl-1", "client-model")
    assert (resp.incomplete_details.reason if resp.incomplete_details else None) == reason
    assert [i.type for i in resp.output] == ["reasoning", "message", "function_call"]
    assert resp.output_text == "Hello there" and resp.output[0].encrypted_content == "sig"  # type: ignore[union-attr]
    assert resp.usage is not None and (resp.usage.input_tokens_details.cached_tokens,
                                       resp.usage.output_tokens_details.reasoning_tokens) == (10, 5)
    assert (resp.instructions, resp.metadata, resp.user, resp.store) == ("x", {"a": "b"}, "u", False)
    assert resp.tools[0].strict is None  # type: ignore[union-attr]


def test_usage_round_trips() -> None:
    usage = Usage(input_tokens=100, output_tokens=40, cache_read_tokens=30, cache_write_tokens=5, reasoning_tokens=9)
    assert render.parse_usage(render.render_usage(usage)) == usage
    assert render.parse_usage({"input_tokens": -3, "output_tokens": True}) == Usage()
    assert render.parse_usage("nope") is None


# ---- canonical events → the Responses stream ------------------------------------------------------


def encoder(**params: Any) -> ResponsesStreamEncoder:
    return ResponsesStreamEncoder(ResponsesSummary(model="client-model", params={"model": "client-model", **params}),
                                  "req1")


def test_a_converted_stream_is_the_full_event_sequence() -> None:
    enc = encoder(tools=[FN])
    out = b"".join(enc.encode(e) for e in [
        StreamStart(id="x", model="up"),
        ReasoningDelta(index=0, text="hmm, "), ReasoningDelta(index=0, text="ok"),
        ReasoningDelta(index=0, signature="s1"),
        TextDelta(index=1, text="Hi "), TextDelta(index=1, text="you"),
        ToolCallDelta(index=2, tool_index=0, id="call_1", name="lookup"),
        ToolCallDelta(index=2, tool_index=0, arguments='{"q":'), ToolCallDelta(index=2, tool_index=0, arguments='"z"}'),
        StreamStop(stop_reason="tool_calls")])
    out += enc.finish(Usage(input_tokens=7, output_tokens=9))
    events = sse_events(out)
    for n, event in enumerate(events):
        validate("ResponseStreamEvent", event)
        assert event["sequence_number"] == n
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed"]
    final = Response.model_validate(events[-1]["response"])
    assert final.id == events[0]["response"]["id"] == "resp_req1" and final.status == "completed"
    reasoning, message, call = final.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "hmm, ok"
    assert reasoning.encrypted_content == "s1"
    assert final.output_text == "Hi you"
    assert call.type == "function_call" and (call.call_id, call.arguments) == ("call_1", '{"q":"z"}')
    assert final.usage is not None and final.usage.output_tokens == 9 and final.tools[0].name == "lookup"  # type: ignore[union-attr]


def test_a_stream_cut_by_the_limit_is_incomplete() -> None:
    enc = encoder()
    out = enc.encode(TextDelta(index=0, text="abc")) + enc.encode(StreamStop(stop_reason="length")) + enc.finish(None)
    events = sse_events(out)
    assert events[0]["type"] == "response.created"  # begun by the first content, without a StreamStart
    assert events[-2]["item"]["status"] == "incomplete"
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}
    for event in events:
        validate("ResponseStreamEvent", event)


def test_errors_in_a_stream() -> None:
    err = GatewayError(502, "upstream stream ended early", code="stream_eof", upstream=True)
    passthrough = sse_events(encoder().error(err))  # the upstream's response: only the error event
    assert [e["type"] for e in passthrough] == ["error"]
    assert passthrough[0]["code"] == "stream_eof" and passthrough[0]["param"] is None
    enc = encoder()
    begun = enc.encode(TextDelta(index=0, text="partial"))
    ended = sse_events(begun + enc.error(err))
    assert [e["type"] for e in ended[-2:]] == ["error", "response.failed"]
    assert ended[-1]["response"]["error"] == {"code": "server_error", "message": "upstream stream ended early"}
    for event in ended:
        validate("ResponseStreamEvent", event)
    assert enc.finish(None) == b""  # settled once: nothing after the failure


# ---- the native pass-through's readers ---------------------------------------------------------------


def test_passthrough_reads_usage_output_and_errors() -> None:
    reader = ResponsesPassthrough()
    assert reader.feed("response.created", json_dumps({"type": "response.created", "response": {}}))
    assert reader.feed("response.output_text.delta", json_dumps({"type": "response.output_text.delta",
                                                                 "delta": "12345"}))
    assert reader.output_chars == 5 and not reader.done
    final = {"type": "response.completed", "response": {"usage": {
        "input_tokens": 3, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 1},
        "output_tokens_details": {"reasoning_tokens": 2}}}}
    assert reader.feed("response.completed", json_dumps(final))
    assert reader.done and reader.usage == Usage(input_tokens=3, output_tokens=4, cache_read_tokens=1,
                                                 reasoning_tokens=2)
    failing = ResponsesPassthrough()
    assert not failing.feed("error", json_dumps({"type": "error", "code": "server_error", "message": "boom",
                                                 "param": None}))
    assert failing.error is not None and (failing.error.code, failing.error.message) == ("server_error", "boom")
    garbage = ResponsesPassthrough()
    assert not garbage.feed(None, b"{not json") and garbage.error is not None
    assert garbage.error.code == "bad_response_body"
    odd = ResponsesPassthrough()
    assert odd.feed(None, json_dumps({"type": ["not", "a", "name"]})) and odd.error is None


def test_native_answers_are_read_for_billing() -> None:
    body = {"object": "response", "output": [{"type": "message", "content": [{"type": "output_text", "text": "ab"}]},
                                             {"type": "function_call", "arguments": "{}"}]}
    assert NATIVE.read_usage(json_dumps({**body, "usage": {"input_tokens": 2, "output_tokens": 3}})) == (
        Usage(input_tokens=2, output_tokens=3), 0)
    assert NATIVE.read_usage(json_dumps(body)) == (None, 4)  # no usage: the output seen
    for bad in (b"[]", b"{}", b"nope"):
        with pytest.raises(GatewayError) as info:
            NATIVE.read_usage(bad)
        assert (info.value.status, info.value.code) == (502, "bad_response_body")


# ---- compaction ------------------------------------------------------------------------------------


def test_compaction_model_and_upstream_name() -> None:
    assert compact.summarize_compact({"model": "gpt-5", "input": "x"}).model == "gpt-5-openai-compact"
    assert compact.summarize_compact({"model": "gpt-5-openai-compact", "input": "x"}).model == "gpt-5-openai-compact"
    for body, param in (({"input": "x"}, "model"), ({"model": "m"}, "input"), ({"model": "m", "input": 3}, "input"),
                        ({"model": "m", "input": "x", "stream": True}, "stream")):
        with pytest.raises(GatewayError) as info:
            compact.summarize_compact(body)
        assert info.value.param == param

    def ex(upstream: str, mapping: dict[str, str]) -> Any:
        return SimpleNamespace(model="gpt-5-openai-compact", upstream_model=upstream,
                               channel=SimpleNamespace(model_mapping=mapping))

    assert compact.upstream_model(ex("gpt-5-openai-compact", {})) == "gpt-5"
    assert compact.upstream_model(ex("gpt-5-openai-compact", {"gpt-5": "gpt-5-2025"})) == "gpt-5-2025"
    assert compact.upstream_model(ex("custom", {"gpt-5-openai-compact": "custom"})) == "custom"


def test_compaction_prices_fall_back_to_the_wildcard() -> None:
    def price(model: str, **options: Any) -> Any:
        opts = SimpleNamespace(model_price={}, model_ratio={}, completion_ratio={}, cache_ratio={},
                               create_cache_ratio={}, quota_per_unit=500_000,
                               group_ratio_for=lambda user_group, group: {"vip": 2.0}.get(group, 1.0))
        for name, value in options.items():
            setattr(opts, name, value)
        # the lookups by name (new-api's matching names are the core's: core/tests/test_price_tables.py)
        opts.price_of, opts.ratio_of = opts.model_price.get, opts.model_ratio.get
        opts.create_cache_ratio_of = lambda model: opts.create_cache_ratio.get(model, 1.25)
        pricer = compact.CompactPricer(SimpleNamespace(options=opts))  # type: ignore[arg-type]
        principal = SimpleNamespace(group="vip", user=SimpleNamespace(group="default"))
        return pricer.price(SimpleNamespace(model=model, principal=principal), None)  # type: ignore[arg-type]

    assert price("gpt-5", model_ratio={"*-openai-compact": 3.0}) is None  # not a compaction
    assert price("gpt-5-openai-compact") is None  # nothing for it: the default pricer decides
    assert price("gpt-5-openai-compact", model_ratio={"gpt-5-openai-compact": 1.0, "*-openai-compact": 3.0}) is None
    by_ratio = price("gpt-5-openai-compact", model_ratio={"*-openai-compact": 3.0},
                     completion_ratio={"*-openai-compact": 4.0})
    assert (by_ratio.model_ratio, by_ratio.completion_ratio, by_ratio.group_ratio) == (3.0, 4.0, 2.0)
    by_price = price("gpt-5-openai-compact", model_price={"*-openai-compact": 0.02},
                     model_ratio={"gpt-5-openai-compact": 1.0})
    assert by_price.model_price == 0.02  # new-api: a price (even the wildcard's) before any ratio
