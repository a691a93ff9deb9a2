"""The official SDKs as clients of the gateway, relaying to a Vertex AI channel with a
service account: the ``google-genai`` SDK on a Gemini model (passed through) and on Claude
(converted), the Anthropic SDK on Claude (passed through to ``rawPredict``) and on Gemini
(converted), the OpenAI SDK on both (converted); regular answers, streams and tools. Each
call carries the service account's access token and project, the location of new-api's
region map, and is billed from the upstream's usage."""

from __future__ import annotations

import json
from typing import Any

import httpx
from google.genai import types

from faregate.testing.logs import consume_logs
from faregate_adapter_anthropic.testing import REPLY_PREFIX as CLAUDE_REPLY
from faregate_adapter_anthropic.testing import TOOL_INPUT as CLAUDE_TOOL_INPUT
from faregate_adapter_gemini.testing import REPLY_PREFIX as GEMINI_REPLY
from faregate_adapter_gemini.testing import TOOL_ARGS
from faregate_adapter_vertex.names import ANTHROPIC_VERSION

from .conftest import CLAUDE, CLAUDE_VERTEX, GEMINI

WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
OPENAI_WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                                   "parameters": WEATHER["input_schema"]}}


def _gemini_path(deployed: Any, action: str) -> str:
    return (f"/v1/projects/{deployed.account.project_id}/locations/us-central1/publishers/google/models/"
            f"{GEMINI}:{action}")


def _claude_path(deployed: Any, action: str) -> str:
    return (f"/v1/projects/{deployed.account.project_id}/locations/us-east5/publishers/anthropic/models/"
            f"{CLAUDE_VERTEX}:{action}")


def _authorised(deployed: Any, sent: dict[str, Any]) -> None:
    token = sent["headers"]["authorization"].removeprefix("Bearer ")
    assert deployed.oauth.valid(token) == deployed.account.client_email
    assert sent["headers"]["x-goog-user-project"] == deployed.account.project_id
    assert "key" not in sent["query"] and "x-goog-api-key" not in sent["headers"]


async def test_genai_sdk_on_gemini_is_passed_through(deployed: Any) -> None:
    deployed.fake.cached_tokens = 32
    client = deployed.genai()
    reply = await client.aio.models.generate_content(
        model=GEMINI, contents="hello vertex",
        config=types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=256))
    assert reply.text == GEMINI_REPLY + "hello vertex"
    chunks = [c async for c in await client.aio.models.generate_content_stream(model=GEMINI, contents="stream it")]
    assert len(chunks) > 1 and "".join(c.text or "" for c in chunks) == GEMINI_REPLY + "stream it"
    first, second = deployed.fake.requests
    assert first["path"] == _gemini_path(deployed, "generateContent")
    assert second["path"] == _gemini_path(deployed, "streamGenerateContent") and second["query"] == {"alt": "sse"}
    _authorised(deployed, first)
    rows = await consume_logs(deployed.server)
    assert [r.is_stream for r in rows] == [False, True]
    assert reply.usage_metadata is not None and rows[0].prompt_tokens == reply.usage_metadata.prompt_token_count
    assert json.loads(rows[0].other)["cache_tokens"] == 32


async def test_genai_function_calling_without_ids(deployed: Any) -> None:
    """Gemini clients may send function-call ids; Vertex takes none: they are taken out."""
    body = {"contents": [
        {"role": "user", "parts": [{"text": "Please call tool for the weather"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "call-1", "name": "get_weather", "args": TOOL_ARGS}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "call-1", "name": "get_weather",
                                                         "response": {"result": "sunny"}}}]}],
        "tools": [{"functionDeclarations": [{"name": "get_weather", "parametersJsonSchema": {"type": "object"}}]}]}
    async with httpx.AsyncClient(base_url=deployed.server.base_url) as http:
        resp = await http.post(f"/v1beta/models/{GEMINI}:generateContent", json=body,
                               headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200, resp.text
    sent = deployed.fake.requests[-1]["json"]
    assert "id" not in sent["contents"][1]["parts"][0]["functionCall"]
    assert "id" not in sent["contents"][2]["parts"][0]["functionResponse"]
    client = deployed.genai()
    called: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        called.append(city)
        return "sunny"

    reply = await client.aio.models.generate_content(model=GEMINI, contents="Please call tool now",
                                                     config=types.GenerateContentConfig(tools=[get_weather]))
    assert called == [TOOL_ARGS["city"]] and reply.text and reply.text.startswith(GEMINI_REPLY)


async def test_anthropic_sdk_on_claude_is_passed_through(deployed: Any) -> None:
    client = deployed.anthropic()
    reply = await client.messages.create(model=CLAUDE, max_tokens=256,
                                         messages=[{"role": "user", "content": "hello claude on vertex"}])
    assert reply.content[0].type == "text" and reply.content[0].text == CLAUDE_REPLY + "hello claude on vertex"
    async with client.messages.stream(model=CLAUDE, max_tokens=256, tools=[WEATHER],
                                      messages=[{"role": "user", "content": "Please call tool now"}]) as stream:
        final = await stream.get_final_message()
    (use,) = [b for b in final.content if b.type == "tool_use"]
    assert final.stop_reason == "tool_use" and use.input == CLAUDE_TOOL_INPUT
    first, second = deployed.fake.requests
    assert first["path"] == _claude_path(deployed, "rawPredict")
    assert second["path"] == _claude_path(deployed, "streamRawPredict") and second["json"]["stream"] is True
    assert first["json"]["anthropic_version"] == ANTHROPIC_VERSION and "model" not in first["json"]
    _authorised(deployed, second)
    rows = await consume_logs(deployed.server)
    assert rows[0].prompt_tokens == reply.usage.input_tokens and rows[1].is_stream
    assert rows[1].completion_tokens == final.usage.output_tokens


async def test_openai_sdk_on_both_publishers(deployed: Any) -> None:
    client = deployed.openai()
    gemini = await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "hi gemini"}])
    assert gemini.choices[0].message.content == GEMINI_REPLY + "hi gemini"
    claude = await client.chat.completions.create(model=CLAUDE, messages=[{"role": "user", "content": "hi claude"}])
    assert claude.choices[0].message.content == CLAUDE_REPLY + "hi claude"
    for model in (GEMINI, CLAUDE):
        stream = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Please call tool please"}], tools=[OPENAI_WEATHER],
            tool_choice="required", stream=True, stream_options={"include_usage": True})
        names, usage = "", None
        async for chunk in stream:
            usage = chunk.usage or usage
            for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                names += delta.function.name or "" if delta.function else ""
        assert names == "get_weather" and usage is not None and usage.completion_tokens > 0
    paths = [r["path"].rsplit(":", 1)[1] for r in deployed.fake.requests]
    assert paths == ["generateContent", "rawPredict", "streamGenerateContent", "streamRawPredict"]
    rows = await consume_logs(deployed.server)
    assert len(rows) == 4 and [r.is_stream for r in rows] == [False, False, True, True]


async def test_anthropic_sdk_on_gemini_and_genai_on_claude(deployed: Any) -> None:
    claude_client = deployed.anthropic()
    reply = await claude_client.messages.create(model=GEMINI, max_tokens=128,
                                                messages=[{"role": "user", "content": "converted to gemini"}])
    assert reply.content[0].type == "text" and reply.content[0].text == GEMINI_REPLY + "converted to gemini"
    answer = await deployed.genai().aio.models.generate_content(model=CLAUDE, contents="converted to claude")
    assert answer.text == CLAUDE_REPLY + "converted to claude"
    assert len(await consume_logs(deployed.server)) == 2
