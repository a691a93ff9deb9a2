"""The plugin's pure functions, without a gateway: request, response, usage, finish-reason,
schema and error conversions both ways (the mapping tables of docs/architecture.md's
Gemini column)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    ImagePart,
    Message,
    Reasoning,
    ReasoningPart,
    TextPart,
    Tool,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
)
from faregate_adapter_gemini import errors, requests, responses
from faregate_adapter_gemini.parts import SKIP_SIGNATURE, response_object, response_text
from faregate_adapter_gemini.schema_map import MAX_DEPTH, to_json_schema
from faregate_adapter_gemini.testing.schema import validate_error, validate_response

QUIET: dict[str, Any] = {"safety_threshold": ""}  # no safety settings: the bodies stay small


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


# ---- Gemini → canonical ------------------------------------------------------------------


def test_turns_calls_and_responses_become_canonical_messages() -> None:
    body = {"systemInstruction": {"parts": [{"text": "sys"}]},
            "contents": [user({"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}),
                         model({"text": "thinking…", "thought": True, "thoughtSignature": "c2ln"},
                               {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "c2lnMg=="},
                               {"functionCall": {"name": "f", "args": {"a": 2}}}),
                         {"role": "function", "parts": [{"functionResponse": {"name": "f", "response": {"ok": 1}}},
                                                        {"functionResponse": {"name": "f",
                                                                              "response": {"result": "two"}}}]},
                         user({"text": "thanks"})]}
    req = requests.parse_request(body, "m", False)
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool", "user"]
    assert req.messages[1].content[1] == ImagePart(data="AAAA", media_type="image/png")
    thought, signature, first, second = req.messages[2].content
    assert thought == ReasoningPart(text="thinking…", signature="c2ln")
    assert signature == ReasoningPart(signature="c2lnMg==")
    assert isinstance(first, ToolCallPart) and isinstance(second, ToolCallPart) and first.id != second.id
    results = req.messages[3].content
    assert [r.tool_call_id for r in results if isinstance(r, ToolResultPart)] == [first.id, second.id]
    assert [r.content[0] for r in results if isinstance(r, ToolResultPart)] == [TextPart('{"ok":1}'),
                                                                                  TextPart("two")]


def test_a_function_response_without_its_call_is_refused() -> None:
    body = {"contents": [user({"functionResponse": {"name": "f", "response": {}}})]}
    with pytest.raises(GatewayError) as refused:
        requests.parse_request(body, "m", False)
    assert refused.value.status == 400 and refused.value.param == "contents[0].parts[0].functionResponse"


def test_tools_schema_and_config() -> None:
    body = {"contents": [user({"text": "x"})],
            "tools": [{"functionDeclarations": [
                {"name": "a", "parameters": {"type": "OBJECT", "nullable": False, "propertyOrdering": ["x"],
                                             "properties": {"x": {"type": "STRING", "nullable": True,
                                                                  "enum": ["p", "q"]},
                                                            "n": {"type": "ARRAY", "items": {"type": "INTEGER"},
                                                                  "maxItems": "3"}}}},
                {"name": "b", "parametersJsonSchema": {"type": "object", "additionalProperties": False}}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["b"]}},
            "generationConfig": {"topK": 5.0, "candidateCount": "1", "responseMimeType": "application/json",
                                 "thinkingConfig": {"thinkingLevel": "HIGH"}}}
    req = requests.parse_request(body, "m", False)
    assert req.tools[0].parameters == {"type": "object", "properties": {
        "x": {"type": ["string", "null"], "enum": ["p", "q"]}, "n": {"type": "array", "items": {"type": "integer"},
                                                                     "maxItems": 3}}}
    assert req.tools[1].parameters == {"type": "object", "additionalProperties": False}
    assert req.tool_choice == ToolChoice(mode="tool", name="b")
    assert (req.top_k, req.n, req.response_format) == (5, 1, {"type": "json_object"})
    assert req.reasoning == Reasoning(effort="high")


@pytest.mark.parametrize("thinking,expected", [
    ({"thinkingBudget": 0}, Reasoning(enabled=False)),
    ({"thinkingBudget": -1}, Reasoning()),
    ({"thinkingBudget": 3000, "includeThoughts": True}, Reasoning(budget_tokens=3000)),
    ({"thinkingLevel": "LOW"}, Reasoning(effort="low")),
])
def test_thinking_configs(thinking: dict[str, Any], expected: Reasoning) -> None:
    body = {"contents": [user({"text": "x"})], "generationConfig": {"thinkingConfig": thinking}}
    assert requests.parse_request(body, "m", False).reasoning == expected


@pytest.mark.parametrize("schema", [{"type": "WHATEVER"}, {"properties": []}, {"maxItems": "-1"}, []])
def test_bad_schemas_are_400s(schema: Any) -> None:
    with pytest.raises(GatewayError) as refused:
        to_json_schema(schema)
    assert refused.value.status == 400


def test_deep_schemas_are_refused_not_recursed() -> None:
    deep: dict[str, Any] = {"type": "STRING"}
    for _ in range(MAX_DEPTH + 5):
        deep = {"type": "ARRAY", "items": deep}
    with pytest.raises(GatewayError):
        to_json_schema(deep)


@pytest.mark.parametrize("response", [{"result": "text"}, {"a": [1, {"b": None}]}, {"result": '{"a": 1}'}, {},
                                      {"result": 5}, {"result": "x", "other": 1}])
def test_function_response_values_round_trip(response: dict[str, Any]) -> None:
    assert response_object(response_text(response)) == response


# ---- canonical → Gemini ------------------------------------------------------------------


def test_canonical_request_as_gemini() -> None:
    req = ChatRequest(model="m", messages=[
        Message("system", [TextPart("sys")]), Message("developer", [TextPart("dev")]),
        Message("user", [TextPart("look"), TextPart(""), ImagePart(url="https://x.test/cat.JPG?size=1"),
                         ImagePart(url="data:image/webp;base64,UklG")]),
        Message("assistant", [ReasoningPart(redacted="opaque"), ReasoningPart(signature="c2ln"), TextPart("let me"),
                              ToolCallPart(id="call_1", name="f", arguments='{"q": 1}'),
                              ToolCallPart(id="call_2", name="g", arguments="not json")]),
        Message("tool", [ToolResultPart(tool_call_id="call_1", content=[TextPart("done")]),
                         ToolResultPart(tool_call_id="call_2", content=[TextPart("boom")], is_error=True)]),
        Message("user", [TextPart("and?")])],
        tools=[Tool(name="f", parameters={"properties": {}}), Tool(name="g", description="G")],
        tool_choice=ToolChoice(mode="required"), stop=["x"], response_format={"type": "json_object"},
        reasoning=Reasoning(effort="high"))
    body = requests.render_request(req, "gemini-2.5-flash", QUIET)
    assert body["systemInstruction"] == {"parts": [{"text": "sys"}, {"text": "dev"}]}
    assert body["contents"][0]["parts"] == [
        {"text": "look"}, {"fileData": {"fileUri": "https://x.test/cat.JPG?size=1", "mimeType": "image/jpeg"}},
        {"inlineData": {"mimeType": "image/webp", "data": "UklG"}}]
    assert body["contents"][1]["parts"] == [
        {"text": "let me"}, {"functionCall": {"name": "f", "args": {"q": 1}, "id": "call_1"},
                             "thoughtSignature": "c2ln"},
        {"functionCall": {"name": "g", "args": {}, "id": "call_2"}}]
    # the tool results and the user's next words are one turn
    assert body["contents"][2] == user({"functionResponse": {"name": "f", "response": {"result": "done"},
                                                             "id": "call_1"}},
                                       {"functionResponse": {"name": "g", "response": {"error": "boom"},
                                                             "id": "call_2"}},
                                       {"text": "and?"})
    assert body["tools"] == [{"functionDeclarations": [
        {"name": "f", "parametersJsonSchema": {"type": "object", "properties": {}}},
        {"name": "g", "description": "G"}]}]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert body["generationConfig"] == {"stopSequences": ["x"], "responseMimeType": "application/json",
                                        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 24576}}
    assert "safetySettings" not in body


def test_gemini_3_takes_levels_and_signed_calls() -> None:
    req = ChatRequest(model="m", messages=[Message("user", [TextPart("x")]),
                                           Message("assistant", [ToolCallPart(id="c", name="f", arguments="{}")]),
                                           Message("tool", [ToolResultPart(tool_call_id="c", content=[])])],
                      reasoning=Reasoning(effort="low"))
    body = requests.render_request(req, "gemini-3-pro-preview", QUIET)
    assert body["contents"][1]["parts"][0]["thoughtSignature"] == SKIP_SIGNATURE
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "LOW"}
    assert requests.render_request(req, "gemini-2.5-pro", QUIET)["contents"][1]["parts"][0].get(
        "thoughtSignature") is None


@pytest.mark.parametrize("req,param", [
    (ChatRequest(model="m", messages=[Message("system", [TextPart("only")])]), "messages"),
    (ChatRequest(model="m", messages=[Message("tool", [ToolResultPart(tool_call_id="x", content=[])])]),
     "messages[0]"),
    (ChatRequest(model="m", messages=[Message("user", [TextPart("x")])], n=2), "n"),
    (ChatRequest(model="m", messages=[Message("user", [TextPart("x")])], seed=2**40), "seed"),
    (ChatRequest(model="m", messages=[Message("user", [TextPart("x")])], stop=list("abcdef")), "stop"),
    (ChatRequest(model="m", messages=[Message("user", [TextPart("x")])],
                 response_format={"type": "json_schema", "json_schema": {"name": "n"}}), "response_format"),
])
def test_what_gemini_cannot_take_is_a_400(req: ChatRequest, param: str) -> None:
    with pytest.raises(GatewayError) as refused:
        requests.render_request(req, "gemini-2.5-flash", QUIET)
    assert (refused.value.status, refused.value.param) == (400, param)


def test_safety_settings_of_converted_requests() -> None:
    req = ChatRequest(model="m", messages=[Message("user", [TextPart("x")])])
    default = requests.render_request(req, "m", {})["safetySettings"]
    assert {s["threshold"] for s in default} == {"BLOCK_NONE"} and len(default) == 4
    high = requests.render_request(req, "m", {"safety_threshold": "BLOCK_ONLY_HIGH"})["safetySettings"]
    assert {s["threshold"] for s in high} == {"BLOCK_ONLY_HIGH"}
    assert "safetySettings" not in requests.render_request(req, "m", {"safety_threshold": "nonsense"})


# ---- responses, usage, finish reasons ------------------------------------------------------


@pytest.mark.parametrize("gemini,calls,canonical", [
    ("STOP", False, "stop"), ("STOP", True, "tool_calls"), ("MAX_TOKENS", False, "length"),
    ("SAFETY", False, "content_filter"), ("RECITATION", False, "content_filter"),
    ("BLOCKLIST", False, "content_filter"), ("PROHIBITED_CONTENT", False, "content_filter"),
    ("SPII", False, "content_filter"), ("IMAGE_SAFETY", False, "content_filter"),
    ("MALFORMED_FUNCTION_CALL", False, "error"), ("OTHER", False, "error"), ("SOMETHING_NEW", False, "error"),
])
def test_finish_reasons_from_gemini(gemini: str, calls: bool, canonical: str) -> None:
    assert responses.stop_from_gemini(gemini, calls) == canonical


@pytest.mark.parametrize("canonical,gemini", [("stop", "STOP"), ("length", "MAX_TOKENS"), ("tool_calls", "STOP"),
                                              ("content_filter", "SAFETY"), ("error", "OTHER"), (None, "STOP")])
def test_finish_reasons_to_gemini(canonical: Any, gemini: str) -> None:
    assert responses.stop_to_gemini(canonical) == gemini


def test_usage_follows_the_canonical_convention() -> None:
    usage = responses.parse_usage({"promptTokenCount": 100, "cachedContentTokenCount": 30, "candidatesTokenCount": 20,
                                   "thoughtsTokenCount": 50, "toolUsePromptTokenCount": 7, "totalTokenCount": 177,
                                   "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 90},
                                                           {"modality": "AUDIO", "tokenCount": 10}]})
    assert usage == Usage(input_tokens=107, output_tokens=70, cache_read_tokens=30, reasoning_tokens=50,
                          audio_tokens=10)
    assert responses.render_usage(usage) == {"promptTokenCount": 107, "candidatesTokenCount": 20,
                                             "totalTokenCount": 177, "cachedContentTokenCount": 30,
                                             "thoughtsTokenCount": 50}
    assert responses.parse_usage({"promptTokenCount": True, "candidatesTokenCount": -3}) == Usage()


def test_a_blocked_prompt_is_a_content_filter_stop() -> None:
    answer = responses.parse_response({"promptFeedback": {"blockReason": "SAFETY"},
                                       "usageMetadata": {"promptTokenCount": 4}})
    assert answer.stop_reason == "content_filter" and answer.message.content == []
    assert answer.usage == Usage(input_tokens=4)


def test_answers_render_thoughts_only_when_asked() -> None:
    answer = ChatResponse(id="r1", model="x", message=Message("assistant", [
        ReasoningPart(text="hmm", signature="c2lnMQ=="), ReasoningPart(text="more"), TextPart("yes"),
        ReasoningPart(signature="c2lnMg=="), ToolCallPart(id="c1", name="f", arguments='{"a": [1]}')]),
        stop_reason="tool_calls", usage=Usage(input_tokens=5, output_tokens=9, reasoning_tokens=4))
    hidden = validate_response(responses.render_response(answer, "m", show_thoughts=False))
    parts = hidden["candidates"][0]["content"]["parts"]
    assert parts == [{"text": "yes"}, {"functionCall": {"name": "f", "args": {"a": [1]}, "id": "c1"},
                                       "thoughtSignature": "c2lnMg=="}]
    assert hidden["candidates"][0]["finishReason"] == "STOP"
    assert hidden["usageMetadata"] == {"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 14,
                                       "thoughtsTokenCount": 4}
    shown = responses.render_response(answer, "m", show_thoughts=True)["candidates"][0]["content"]["parts"]
    assert shown[:2] == [{"text": "hmm", "thought": True, "thoughtSignature": "c2lnMQ=="},
                         {"text": "more", "thought": True}]


def test_answer_parts_with_no_canonical_form_are_left_out() -> None:
    answer = responses.parse_response({"candidates": [{"content": {"parts": [
        {"executableCode": {"code": "print(1)"}}, {"inlineData": {"mimeType": "audio/wav", "data": "AA"}},
        {"text": "ok"}]}, "finishReason": "STOP"}]})
    assert answer.message.content == [TextPart("ok")]


# ---- errors -----------------------------------------------------------------------------


def test_gateway_errors_in_geminis_shape() -> None:
    for status, name in ((400, "INVALID_ARGUMENT"), (401, "UNAUTHENTICATED"), (403, "PERMISSION_DENIED"),
                         (404, "NOT_FOUND"), (408, "DEADLINE_EXCEEDED"), (413, "INVALID_ARGUMENT"),
                         (429, "RESOURCE_EXHAUSTED"), (500, "INTERNAL"), (502, "UNAVAILABLE"), (503, "UNAVAILABLE"),
                         (504, "DEADLINE_EXCEEDED"), (418, "INVALID_ARGUMENT"), (599, "INTERNAL")):
        code, raw = errors.render_error(GatewayError(status, "nope", code="x_y", param="a.b"), "req-9")
        body = validate_error(json.loads(raw))
        assert (code, body["error"]["code"], body["error"]["status"]) == (status, status, name)
        assert body["error"]["message"] == "nope (request id: req-9)"
        assert body["error"]["details"][0]["fieldViolations"] == [{"field": "a.b", "description": "nope"}]
        assert body["error"]["details"][1]["reason"] == "X_Y"


def test_upstream_errors_are_read() -> None:
    body = {"error": {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}}
    err = errors.parse_error(429, json.dumps(body).encode())
    assert (err.status, err.type, err.code, err.upstream) == (429, "RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED", True)
    wrapped = errors.parse_error(400, json.dumps([body]).encode())  # a JSON-array stream's error
    assert wrapped.type == "RESOURCE_EXHAUSTED"
    dead = errors.parse_error(400, json.dumps({"error": {
        "code": 400, "message": "API key not valid. key=AIzaSyLeakedLeakedLeaked", "status": "INVALID_ARGUMENT",
        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}).encode())
    assert (dead.status, dead.code) == (401, "invalid_api_key") and "AIza" not in dead.message
    html = errors.parse_error(502, b"<html>bad gateway</html>")
    assert html.code == "bad_response_status_code" and "html" not in html.message
    rendered = json.loads(errors.render_error(err, "r")[1])
    assert rendered["error"]["status"] == "RESOURCE_EXHAUSTED" and "details" not in rendered["error"]
