"""The Discovery → JSON Schema converter behind the fake Gemini's request checks and the
tests' answer checks: every schema of the document compiles; requests are read as Google's
parser reads them (both spellings, nulls as unset, numbers as strings, enums by number,
unknown fields refused) with the hand-added documented requirements; answers strictly.
And the fake itself: a request the schema refuses is a 400 and fails the test."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_gemini.testing import FLASH, FakeGemini
from faregate_adapter_gemini.testing.discovery import convert, drop_nulls
from faregate_adapter_gemini.testing.schema import REQUESTS, RESPONSES, request_problem, validate_response

TEXT = {"parts": [{"text": "x"}]}


@pytest.mark.parametrize("spec", [REQUESTS, RESPONSES], ids=["requests", "responses"])
def test_every_schema_compiles(spec: Any) -> None:
    names = spec.schema_names()
    assert len(names) > 150 and "GenerateContentRequest" in names
    for name in names:
        Draft202012Validator.check_schema(spec.document["components"]["schemas"][name])
        spec.validator(name).is_valid({})


def test_the_converter_maps_discovery_types() -> None:
    assert convert({"type": "any"}, True) == {}
    assert convert({"type": "object", "additionalProperties": {"type": "string"}}, False) == {
        "type": "object", "additionalProperties": {"type": "string"}}
    assert convert({"type": "string", "format": "byte"}, False)["pattern"]
    props = convert({"type": "object", "properties": {"inlineData": {"$ref": "Blob"}}}, True)["properties"]
    assert set(props) == {"inlineData", "inline_data"}
    assert drop_nulls({"a": None, "b": [None, {"c": None}]}) == {"b": [None, {}]}


@pytest.mark.parametrize("body", [
    {"contents": [TEXT]},
    {"contents": [{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}}]}],
     "generation_config": {"max_output_tokens": "256", "top_k": 4.0, "temperature": 0.5}},
    {"contents": [TEXT], "generationConfig": None, "tools": [{"functionDeclarations": [{"name": "f"}]}]},
    {"contents": [TEXT], "safetySettings": [{"category": 8, "threshold": "BLOCK_NONE"}]},
    {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"x": None}},
                                               "thoughtSignature": "c2ln_-Z="}]}, TEXT]},
])
def test_requests_google_accepts(body: dict[str, Any]) -> None:
    assert request_problem("generateContent", body) is None


@pytest.mark.parametrize("body,why", [
    ({}, "'contents' is a required property"),
    ({"contents": []}, "should be non-empty"),
    ({"contents": None}, "'contents' is a required property"),
    ({"contents": [{"parts": []}]}, "should be non-empty"),
    ({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}, "'assistant' is not one of"),
    ({"contents": [{"parts": [{"text": "x", "functionCall": {"name": "f"}}]}]}, "valid under each of"),
    ({"contents": [{"parts": [{"thought": True}]}]}, "not valid under any"),
    ({"contents": [{"parts": [{"inlineData": {"data": "AA=="}}]}]}, "not valid under any"),
    ({"contents": [{"parts": [{"inlineData": {"mimeType": "image/png", "data": "not base64!"}}]}]}, "does not match"),
    ({"contents": [TEXT], "temperature": 1}, "'temperature' was unexpected"),
    ({"contents": [TEXT], "generationConfig": {"maxOutputTokens": 2**31}}, "greater than the maximum"),
    ({"contents": [TEXT], "tools": [{"functionDeclarations": [{"description": "no name"}]}]}, "'name' is a required"),
])
def test_requests_google_refuses(body: dict[str, Any], why: str) -> None:
    problem = request_problem("generateContent", body)
    assert problem is not None and why in problem, problem


def test_other_actions() -> None:
    assert request_problem("embedContent", {"content": TEXT, "taskType": "RETRIEVAL_QUERY"}) is None
    assert request_problem("embedContent", {"taskType": "RETRIEVAL_QUERY"}) is not None
    assert request_problem("batchEmbedContents", {"requests": []}) is not None
    assert request_problem("countTokens", {"contents": [TEXT]}) is None
    assert request_problem("countTokens", {"contents": [TEXT], "generate_content_request": {"contents": [TEXT]}})


def test_answers_are_held_to_camel_case_and_known_fields() -> None:
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP",
                              "index": 0}], "usageMetadata": {"promptTokenCount": 3}}
    validate_response(answer)
    for bad in ({**answer, "usage_metadata": {}}, {**answer, "extra": 1}, {**answer, "responseId": None},
                {"candidates": [{"finishReason": "DONE"}]}):
        with pytest.raises(Exception, match=r"."):
            validate_response(bad)


async def test_the_fake_refuses_and_records_what_google_refuses(request: pytest.FixtureRequest) -> None:
    async with FakeGemini(key="k") as fake, httpx.AsyncClient(base_url=fake.base_url) as http:
        bad = await http.post(f"/v1beta/models/{FLASH}:generateContent", json={"contents": [{"parts": []}]},
                              headers={"x-goog-api-key": "k"})
        good = await http.post(f"/v1/models/{FLASH}:generateContent", json={"contents": [TEXT]},
                               params={"key": "k"})
        wrong_key = await http.post(f"/v1beta/models/{FLASH}:generateContent", json={"contents": [TEXT]},
                                    headers={"x-goog-api-key": "nope"})
        no_key = await http.post(f"/v1beta/models/{FLASH}:generateContent", json={"contents": [TEXT]})
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    assert good.status_code == 200 and validate_response(good.json())
    assert wrong_key.status_code == 400 and wrong_key.json()["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    assert no_key.status_code == 403
    assert [v["path"] for v in fake.violations] == [f"/v1beta/models/{FLASH}:generateContent"]
    with pytest.raises(AssertionError, match="violate Gemini's schema"):
        assert_no_violations(fake, request.node, "Gemini")


async def test_the_providers_fake_for_the_cli() -> None:
    """``faregate dev fake-provider gemini`` serves this fake, keyed as told."""
    from faregate_adapter_gemini.provider import GeminiProvider

    async with GeminiProvider().fake_server("127.0.0.1", 0, "cli-key") as fake, httpx.AsyncClient() as http:
        resp = await http.get(fake.base_url + "/v1beta/models", headers={"x-goog-api-key": "cli-key"})
    assert resp.status_code == 200 and f"models/{FLASH}" in resp.text
