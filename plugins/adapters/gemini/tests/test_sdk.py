"""The official ``google-genai`` SDK against the gateway, under both API versions it may be
set to (``v1``, the Python SDK's default, and ``v1beta``, the Node one's), sync and async:
generation, streams, function calling, chats, embeddings, token counting, the model list
and errors; what reached the fake Gemini and what was billed checked each time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.genai import errors, types

from faregate.testing.logs import consume_logs
from faregate_adapter_gemini.testing import EMBEDDING, GEMINI_3, REPLY_PREFIX, TOOL_ARGS
from faregate_adapter_gemini.testing import FLASH as GEMINI
from faregate_adapter_gemini.testing import PRO as GEMINI_PRO

VERSIONS = ["v1", "v1beta"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_generate_sync_and_async(deployed: Any, version: str) -> None:
    client = deployed.genai(version)
    reply = await client.aio.models.generate_content(
        model=GEMINI, contents="hello async",
        config=types.GenerateContentConfig(system_instruction="Be brief.", temperature=0.5, max_output_tokens=256))
    assert reply.text == REPLY_PREFIX + "hello async"
    assert reply.usage_metadata is not None and reply.usage_metadata.prompt_token_count
    sent = deployed.fake.requests[-1]
    assert sent["path"] == f"/v1beta/models/{GEMINI}:generateContent"  # the channel's version, whatever the client's
    assert sent["json"]["systemInstruction"]["parts"][0]["text"] == "Be brief."
    sync = await asyncio.to_thread(client.models.generate_content, model=GEMINI, contents="hello sync")
    assert sync.text == REPLY_PREFIX + "hello sync"
    rows = await consume_logs(deployed.server)
    assert [r.model_name for r in rows] == [GEMINI, GEMINI] and not any(r.is_stream for r in rows)
    assert rows[0].prompt_tokens == reply.usage_metadata.prompt_token_count
    assert rows[0].completion_tokens == reply.usage_metadata.candidates_token_count


@pytest.mark.parametrize("version", VERSIONS)
async def test_stream_sync_and_async(deployed: Any, version: str) -> None:
    client = deployed.genai(version)
    chunks = [c async for c in await client.aio.models.generate_content_stream(model=GEMINI,
                                                                               contents="stream me please")]
    assert len(chunks) > 1 and "".join(c.text or "" for c in chunks) == REPLY_PREFIX + "stream me please"
    assert deployed.fake.requests[-1]["query"] == {"alt": "sse"}

    def sync_stream() -> list[types.GenerateContentResponse]:
        return list(client.models.generate_content_stream(model=GEMINI, contents="sync stream"))

    sync_chunks = await asyncio.to_thread(sync_stream)
    assert "".join(c.text or "" for c in sync_chunks) == REPLY_PREFIX + "sync stream"
    final = chunks[-1].usage_metadata
    assert final is not None and chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == "STOP"
    rows = await consume_logs(deployed.server)
    assert len(rows) == 2 and all(r.is_stream for r in rows)
    assert (rows[0].prompt_tokens, rows[0].completion_tokens) == (final.prompt_token_count,
                                                                  final.candidates_token_count)


async def test_automatic_function_calling(deployed: Any) -> None:
    called: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        called.append(city)
        return "sunny"

    client = deployed.genai("v1beta")
    reply = await client.aio.models.generate_content(
        model=GEMINI, contents="Please call tool for the weather",
        config=types.GenerateContentConfig(tools=[get_weather]))
    assert called == [TOOL_ARGS["city"]]
    assert reply.text == REPLY_PREFIX + "Please call tool for the weather"
    first, second = (r["json"] for r in deployed.fake.requests[-2:])
    assert first["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    answered = second["contents"][-1]["parts"][0]["functionResponse"]
    assert answered["name"] == "get_weather" and answered["response"] == {"result": "sunny"}
    assert len(await consume_logs(deployed.server)) == 2  # each model call billed once


async def test_manual_function_calling_in_a_chat(deployed: Any) -> None:
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather", description="Weather for a city",
        parameters=types.Schema(type=types.Type.OBJECT, properties={"city": types.Schema(type=types.Type.STRING)}))])
    config = types.GenerateContentConfig(tools=[tool], automatic_function_calling=types.AutomaticFunctionCallingConfig(
        disable=True))
    chat = deployed.genai("v1").aio.chats.create(model=GEMINI, config=config)
    first = await chat.send_message("Please call tool now")
    assert first.function_calls and first.function_calls[0].name == "get_weather"
    assert first.function_calls[0].args == TOOL_ARGS
    second = await chat.send_message(types.Part.from_function_response(name="get_weather",
                                                                       response={"result": "rain"}))
    assert second.text == REPLY_PREFIX + "Please call tool now"
    third = await chat.send_message("and now?")
    assert third.text == REPLY_PREFIX + "and now?"
    contents = deployed.fake.requests[-1]["json"]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user"]


async def test_chat_stream(deployed: Any) -> None:
    chat = deployed.genai("v1beta").aio.chats.create(model=GEMINI)
    text = "".join([c.text or "" async for c in await chat.send_message_stream("one")])
    assert text == REPLY_PREFIX + "one"
    again = "".join([c.text or "" async for c in await chat.send_message_stream("two")])
    assert again == REPLY_PREFIX + "two"
    contents = deployed.fake.requests[-1]["json"]["contents"]
    assert contents[0]["parts"] == [{"text": "one"}] and contents[-1] == {"role": "user", "parts": [{"text": "two"}]}
    assert {c["role"] for c in contents[1:-1]} == {"model"}  # the SDK keeps each streamed chunk as a turn


async def test_thinking_is_passed_through_and_billed(deployed: Any) -> None:
    client = deployed.genai("v1beta")
    config = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=1024,
                                                                              include_thoughts=True))
    reply = await client.aio.models.generate_content(model=GEMINI_PRO, contents="think", config=config)
    parts = reply.candidates[0].content.parts if reply.candidates and reply.candidates[0].content else []
    assert [bool(p.thought) for p in parts or []] == [True, False]
    usage = reply.usage_metadata
    assert usage is not None and usage.thoughts_token_count
    (row,) = await consume_logs(deployed.server)
    assert row.completion_tokens == (usage.candidates_token_count or 0) + usage.thoughts_token_count


@pytest.mark.parametrize("version", VERSIONS)
async def test_embeddings(deployed: Any, version: str) -> None:
    client = deployed.genai(version)
    result = await client.aio.models.embed_content(model=EMBEDDING, contents=["first text", "second text"],
                                                    config=types.EmbedContentConfig(output_dimensionality=4))
    assert result.embeddings is not None and [len(e.values or []) for e in result.embeddings] == [4, 4]
    sent = deployed.fake.requests[-1]
    assert sent["path"] == f"/v1beta/models/{EMBEDDING}:batchEmbedContents"
    assert [r["model"] for r in sent["json"]["requests"]] == [f"models/{EMBEDDING}"] * 2
    sync = await asyncio.to_thread(client.models.embed_content, model=EMBEDDING, contents="one")
    assert sync.embeddings is not None and len(sync.embeddings) == 1
    rows = await consume_logs(deployed.server)
    assert [r.model_name for r in rows] == [EMBEDDING, EMBEDDING] and all(r.quota > 0 for r in rows)


async def test_count_tokens_is_local_and_free(deployed: Any) -> None:
    client = deployed.genai("v1")
    counted = await client.aio.models.count_tokens(model=GEMINI, contents="hello world, count me")
    assert counted.total_tokens and counted.total_tokens > 0
    assert deployed.fake.requests == [] and await consume_logs(deployed.server) == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_models_list_pages_and_get(deployed: Any, version: str) -> None:
    client = deployed.genai(version)
    pager = await client.aio.models.list(config={"page_size": 2})
    names = [m.name async for m in pager]
    assert sorted(names) == sorted(f"models/{m}" for m in (GEMINI, GEMINI_PRO, GEMINI_3, EMBEDDING))
    one = await client.aio.models.get(model=GEMINI)
    assert one.name == f"models/{GEMINI}" and one.display_name == GEMINI
    listed = await asyncio.to_thread(lambda: [m.name for m in client.models.list()])
    assert sorted(listed) == sorted(names)


async def test_errors_reach_the_sdk_in_geminis_shape(deployed: Any) -> None:
    client = deployed.genai("v1beta")
    with pytest.raises(errors.ClientError) as unknown:
        await client.aio.models.generate_content(model="gemini-no-such-model", contents="x")
    assert (unknown.value.code, unknown.value.status) == (404, "NOT_FOUND")
    bad_key = deployed.genai("v1", key="sk-not-a-key")
    with pytest.raises(errors.ClientError) as denied:
        await bad_key.aio.models.generate_content(model=GEMINI, contents="x")
    assert (denied.value.code, denied.value.status) == (401, "UNAUTHENTICATED")
    with pytest.raises(errors.ClientError) as invalid:
        await client.aio.models.generate_content(model=GEMINI, contents="x",
                                                 config=types.GenerateContentConfig(temperature=7))
    assert invalid.value.code == 400 and "generationConfig.temperature" in (invalid.value.message or "")
    assert deployed.fake.requests == []


async def test_gemini_3_function_call_turns_keep_their_signature(deployed: Any) -> None:
    """Gemini 3 refuses a function-call turn without its thought signature: the pass-through
    keeps the one the model gave (the fake checks it)."""
    client = deployed.genai("v1beta")
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(name="lookup", description="Look up")])
    config = types.GenerateContentConfig(tools=[tool], thinking_config=types.ThinkingConfig(thinking_level="LOW"),
                                         automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    chat = client.aio.chats.create(model=GEMINI_3, config=config)
    first = await chat.send_message("call tool please")
    assert first.function_calls
    second = await chat.send_message(types.Part.from_function_response(name="lookup", response={"ok": True}))
    assert second.text and second.text.startswith(REPLY_PREFIX)
