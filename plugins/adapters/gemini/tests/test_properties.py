"""Hypothesis round-trip properties of the conversions: a Gemini request through the
canonical model and back, a canonical answer through Gemini's shape and back, usage and
finish reasons both ways, canonical stream events through a Gemini stream and back; and
that no JSON body makes the format's checks fail with anything but a 400."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faregate.api import (
    ChatResponse,
    ContentPart,
    Framing,
    GatewayError,
    Message,
    ReasoningDelta,
    ReasoningPart,
    StreamEvent,
    StreamStop,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    Usage,
    UsageEvent,
    json_dumps,
    splitter_for,
)
from faregate.testing.inbound import inbound_request
from faregate_adapter_gemini import requests, responses, summary
from faregate_adapter_gemini.streams import GeminiStreamEncoder, GeminiStreamParser
from faregate_adapter_gemini.testing.schema import request_problem, validate_response

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
QUIET = {"safety_threshold": ""}

text = st.text(min_size=1, max_size=30)
names = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
ids = st.from_regex(r"call_[a-z0-9]{4,10}", fullmatch=True)
signatures = st.binary(min_size=1, max_size=12).map(lambda b: base64.b64encode(b).decode())
json_leaf = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10)
json_objects = st.dictionaries(st.text(min_size=1, max_size=8),
                               st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                                            | st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3),
                                            max_leaves=8), max_size=4)
images = st.builds(lambda data: {"inlineData": {"mimeType": "image/png", "data": data}},
                   st.binary(min_size=1, max_size=9).map(lambda b: base64.b64encode(b).decode()))
#: Gemini's current harm categories and the thresholds a channel may set ("" sends none)
CATEGORIES = ("HARM_CATEGORY_HARASSMENT", "HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_SEXUALLY_EXPLICIT",
              "HARM_CATEGORY_DANGEROUS_CONTENT")
THRESHOLDS = ("BLOCK_NONE", "BLOCK_ONLY_HIGH", "BLOCK_MEDIUM_AND_ABOVE", "BLOCK_LOW_AND_ABOVE", "OFF")
safety_settings = st.lists(st.builds(lambda c, t: {"category": c, "threshold": t}, st.sampled_from(CATEGORIES),
                                     st.sampled_from(THRESHOLDS)), min_size=1, max_size=3)
#: tool parameters as JSON Schema (what ``parametersJsonSchema`` takes as it is)
json_schemas = st.dictionaries(names, st.sampled_from(["string", "integer", "number", "boolean"]).map(
    lambda t: {"type": t}), max_size=3).flatmap(lambda props: st.builds(
        lambda required: {"type": "object", "properties": props, **({"required": required} if required else {})},
        st.lists(st.sampled_from(sorted(props)), unique=True) if props else st.just([])))


@st.composite
def tooling(draw: st.DrawFn) -> dict[str, Any]:
    """Function declarations (JSON Schema parameters) and, maybe, how they may be called:
    the tool choices the canonical model can say (AUTO, NONE, ANY, ANY of one function)."""
    declarations = []
    for name in draw(st.lists(names, min_size=1, max_size=3, unique=True)):
        declaration: dict[str, Any] = {"name": name}
        if draw(st.booleans()):
            declaration["description"] = draw(text)
        if draw(st.booleans()):
            declaration["parametersJsonSchema"] = draw(json_schemas)
        declarations.append(declaration)
    out: dict[str, Any] = {"tools": [{"functionDeclarations": declarations}]}
    mode = draw(st.sampled_from([None, "AUTO", "NONE", "ANY", "one"]))
    if mode == "one":
        only = draw(st.sampled_from([d["name"] for d in declarations]))
        out["toolConfig"] = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [only]}}
    elif mode is not None:
        out["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    return out


@st.composite
def conversations(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request in the shape the gateway renders: alternating turns; model turns of
    thoughts, text and (signed) calls with ids; the user's turn after calls answers each."""
    contents: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []
    for turn in range(draw(st.integers(1, 4))):
        user: list[dict[str, Any]] = [{"functionResponse": {"name": n, "response": draw(json_objects), "id": i}}
                                      for i, n in pending]
        user += draw(st.lists(st.one_of(text.map(lambda t: {"text": t}), images), min_size=0 if pending else 1,
                              max_size=3))
        contents.append({"role": "user", "parts": user})
        if turn == 3 or not draw(st.booleans()):
            break
        parts: list[dict[str, Any]] = []
        if draw(st.booleans()):
            thought: dict[str, Any] = {"text": draw(text), "thought": True}
            if draw(st.booleans()):
                thought["thoughtSignature"] = draw(signatures)
            parts.append(thought)
        calls = draw(st.lists(st.tuples(ids, names), max_size=2, unique_by=lambda c: c[0]))
        if draw(st.booleans()) or not calls:
            part: dict[str, Any] = {"text": draw(text)}
            if not calls and draw(st.booleans()):
                part["thoughtSignature"] = draw(signatures)
            parts.append(part)
        for k, (call_id, name) in enumerate(calls):
            call: dict[str, Any] = {"functionCall": {"name": name, "args": draw(json_objects), "id": call_id}}
            if k == 0 and draw(st.booleans()):
                call["thoughtSignature"] = draw(signatures)
            parts.append(call)
        contents.append({"role": "model", "parts": parts})
        pending = calls
    body: dict[str, Any] = {"contents": contents}
    if draw(st.booleans()):
        body["systemInstruction"] = {"parts": [{"text": draw(text)}]}
    if draw(st.booleans()):
        body.update(draw(tooling()))
    if draw(st.booleans()):
        body["safetySettings"] = draw(safety_settings)  # the client's: the channel's setting replaces them
    config = draw(st.fixed_dictionaries({}, optional={
        "temperature": st.floats(0, 2), "topP": st.floats(0, 1), "topK": st.integers(1, 100),
        "maxOutputTokens": st.integers(1, 10_000), "stopSequences": st.lists(text, min_size=1, max_size=5),
        "seed": st.integers(-(2**31), 2**31 - 1), "presencePenalty": st.floats(-2, 2),
        "frequencyPenalty": st.floats(-2, 2),
        "thinkingConfig": st.one_of(st.just({"thinkingBudget": 0}),
                                    st.integers(1, 30_000).map(lambda b: {"includeThoughts": True,
                                                                          "thinkingBudget": b})),
        "responseJsonSchema": st.just({"type": "object", "properties": {"a": {"type": "string"}}})}))
    if "responseJsonSchema" in config:
        config["responseMimeType"] = "application/json"
    if config:
        body["generationConfig"] = config
    return body


@FAST
@given(body=conversations(), threshold=st.none() | st.just("") | st.sampled_from(THRESHOLDS))
def test_gemini_requests_survive_the_canonical_model(body: dict[str, Any], threshold: str | None) -> None:
    """Everything comes back as it was, but the safety settings: a converted request carries
    the channel's ``safety_threshold`` for every category (none when it is ""; new-api's
    BLOCK_NONE when the channel sets none), whatever the client's were."""
    assert request_problem("generateContent", body) is None  # the strategy makes only valid requests
    canonical = requests.parse_request(body, "gemini-2.5-flash", False)
    again = requests.render_request(canonical, "gemini-2.5-flash", {} if threshold is None
                                    else {"safety_threshold": threshold})
    expected = {key: value for key, value in body.items() if key != "safetySettings"}
    if threshold != "":
        expected["safetySettings"] = [{"category": c, "threshold": threshold or "BLOCK_NONE"} for c in CATEGORIES]
    assert again == expected
    assert request_problem("generateContent", again) is None


@st.composite
def gemini_schemas(draw: st.DrawFn, depth: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Gemini ``Schema`` (OpenAPI's subset, upper-case types) and the JSON Schema it means."""
    kind = draw(st.sampled_from(["STRING", "INTEGER", "NUMBER", "BOOLEAN"] + (["OBJECT", "ARRAY"] if depth < 2
                                                                             else [])))
    schema: dict[str, Any] = {"type": kind}
    meant: dict[str, Any] = {"type": kind.lower()}
    if kind == "OBJECT":
        props = draw(st.dictionaries(names, gemini_schemas(depth + 1), max_size=3))
        schema["properties"] = {name: pair[0] for name, pair in props.items()}
        meant["properties"] = {name: pair[1] for name, pair in props.items()}
        if props and draw(st.booleans()):
            schema["required"] = meant["required"] = sorted(props)[:1]
            schema["propertyOrdering"] = sorted(props)  # Gemini's alone: not JSON Schema
    elif kind == "ARRAY":
        schema["items"], meant["items"] = draw(gemini_schemas(depth + 1))
    elif kind == "STRING" and draw(st.booleans()):
        schema["enum"] = meant["enum"] = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    if draw(st.booleans()):
        schema["description"] = meant["description"] = draw(text)
    if draw(st.booleans()):
        schema["nullable"] = True
        meant["type"] = [kind.lower(), "null"]
    return schema, meant


@FAST
@given(parameters=gemini_schemas(), answer=gemini_schemas())
def test_gemini_schemas_go_on_as_json_schema(parameters: tuple[dict[str, Any], dict[str, Any]],
                                            answer: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """``parameters`` and ``responseSchema`` (Gemini's OpenAPI subset) reach any channel as the
    JSON Schema they mean; a Gemini channel gets it in ``parametersJsonSchema`` /
    ``responseJsonSchema``."""
    params = {**parameters[0], "type": "OBJECT"}
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "f", "parameters": params}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseSchema": answer[0]}}
    assert request_problem("generateContent", body) is None
    canonical = requests.parse_request(body, "gemini-2.5-flash", False)
    meant = {**parameters[1], "type": ["object", "null"] if params.get("nullable") else "object"}
    assert canonical.tools[0].parameters == meant
    assert canonical.response_format == {"type": "json_schema", "json_schema": {"name": "response",
                                                                                 "schema": answer[1]}}
    again = requests.render_request(canonical, "gemini-2.5-flash", QUIET)
    assert again["generationConfig"]["responseJsonSchema"] == answer[1]
    assert again["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"] == {"type": "object", **meant}


@st.composite
def answers(draw: st.DrawFn) -> ChatResponse:
    parts: list[ContentPart] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "thought", "call"]))
        if kind == "text":
            parts.append(TextPart(draw(text)))
        elif kind == "thought":
            parts.append(ReasoningPart(text=draw(text), signature=draw(st.none() | signatures)))
        else:
            if draw(st.booleans()):
                parts.append(ReasoningPart(signature=draw(signatures)))  # the signature a call came with
            arguments = json_dumps(draw(json_objects)).decode()
            parts.append(ToolCallPart(id=draw(ids), name=draw(names), arguments=arguments))
    calls = any(isinstance(p, ToolCallPart) for p in parts)
    reason = "tool_calls" if calls else draw(st.sampled_from(["stop", "length", "content_filter", "error"]))
    reasoning = draw(st.integers(0, 500))
    cached = draw(st.integers(0, 100))
    usage = Usage(input_tokens=cached + draw(st.integers(0, 1000)), output_tokens=reasoning + draw(st.integers(0, 900)),
                  cache_read_tokens=cached, reasoning_tokens=reasoning)
    return ChatResponse(id=draw(ids), model="m", message=Message("assistant", parts), stop_reason=reason, usage=usage)


def _normal(parts: list[ContentPart]) -> list[Any]:
    return [(p.id, p.name, json.loads(p.arguments)) if isinstance(p, ToolCallPart) else p for p in parts]


@FAST
@given(answer=answers())
def test_canonical_answers_survive_geminis_shape(answer: ChatResponse) -> None:
    rendered = validate_response(responses.render_response(answer, "m", show_thoughts=True))
    back = responses.parse_response(rendered)
    assert _normal(back.message.content) == _normal(answer.message.content)
    assert (back.stop_reason, back.usage, back.id) == (answer.stop_reason, answer.usage, answer.id)


@FAST
@given(answer=answers(), sse=st.booleans(), split=st.integers(1, 50))
def test_canonical_streams_survive_geminis_framing(answer: ChatResponse, sse: bool, split: int) -> None:
    encoder = GeminiStreamEncoder("m", "rid", sse=sse, show_thoughts=True)
    events: list[StreamEvent] = []
    tool = 0
    for index, p in enumerate(answer.message.content):
        if isinstance(p, TextPart):
            events += [TextDelta(index, p.text[:2]), TextDelta(index, p.text[2:])]
        elif isinstance(p, ReasoningPart):
            events.append(ReasoningDelta(index, text=p.text, signature=p.signature))
        elif isinstance(p, ToolCallPart):
            events += [ToolCallDelta(index, tool, id=p.id, name=p.name), ToolCallDelta(index, tool,
                                                                                      arguments=p.arguments)]
            tool += 1
    events.append(StreamStop(answer.stop_reason))
    wire = b"".join(encoder.encode(e) for e in events) + encoder.finish(answer.usage)
    splitter, parser = splitter_for(Framing.SSE if sse else Framing.JSON_ARRAY), GeminiStreamParser()
    got: list[StreamEvent] = []
    for start in range(0, len(wire), split):
        for _, name, data in splitter.feed(wire[start:start + split]):
            if data:
                validate_response(json.loads(data))
            got += parser.feed(name, data)
    assert parser.done
    texts = "".join(e.text for e in got if isinstance(e, TextDelta))
    assert texts == "".join(p.text for p in answer.message.content if isinstance(p, TextPart))
    thoughts = "".join(e.text for e in got if isinstance(e, ReasoningDelta))
    assert thoughts == "".join(p.text for p in answer.message.content if isinstance(p, ReasoningPart))
    signed = [e.signature for e in got if isinstance(e, ReasoningDelta) and e.signature]
    assert signed == [p.signature for p in answer.message.content if isinstance(p, ReasoningPart) and p.signature]
    calls = [(e.id, e.name, json.loads(e.arguments)) for e in got if isinstance(e, ToolCallDelta)]
    assert calls == [c for c in _normal(answer.message.content) if isinstance(c, tuple)]
    stops = [e.stop_reason for e in got if isinstance(e, StreamStop)]
    usage = [e.usage for e in got if isinstance(e, UsageEvent)]
    assert stops == [answer.stop_reason] and usage[-1] == answer.usage


JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["contents", "parts", "role", "text", "generationConfig", "temperature",
                                         "tools", "functionDeclarations", "name", "inlineData", "functionCall",
                                         "args", "systemInstruction", "toolConfig", "safetySettings", "topK",
                                         "thinkingConfig", "thinkingBudget", "x"]), inner, max_size=4),
                    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(body=st.dictionaries(st.sampled_from(["contents", "generationConfig", "tools", "systemInstruction",
                                             "toolConfig", "safetySettings", "cachedContent"]), JSON, max_size=4))
def test_any_body_is_accepted_or_a_400_never_a_crash(body: dict[str, Any]) -> None:
    """What the summary accepts also converts (or is a 400 saying what cannot); whatever it
    refuses is a 400: no body reaches a 5xx."""
    request = inbound_request(path="/v1beta/models/m:generateContent", path_params={"model": "m"})
    try:
        found = summary.summarize_generate(body, request)
    except GatewayError as err:
        assert err.status == 400 and err.param
        return
    assert found.prompt_tokens >= 1
    try:
        requests.parse_request(body, "m", False)
    except GatewayError as err:
        assert err.status == 400 and err.param
