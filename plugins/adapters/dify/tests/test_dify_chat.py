"""OpenAI clients (the official SDK) on a Dify channel: the conversation flattened into
``query`` as new-api does, the user, images by URL, conversations continued, blocking and
streamed answers, Dify's thinking block as reasoning, billing on ``metadata.usage``,
errors before and after the first byte."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient
from faregate.testing.logs import consume_logs
from faregate_adapter_dify.provider import DIFY_CHANNEL_TYPE
from faregate_adapter_dify.testing import APP_MODEL, REPLY_PREFIX, THINKING_TEXT, FakeDify, Fault, words
from faregate_adapter_dify.testing.fixtures import FAKE_DIFY_KEY

RATIO, COMPLETION_RATIO = 0.5, 2.0


class Setup:
    def __init__(self, server: Any, fake: FakeDify, client: openai.AsyncOpenAI, admin: AdminClient,
                 channel: int) -> None:
        self.server, self.fake, self.client, self.admin, self.channel = server, fake, client, admin, channel

    async def consume_logs(self) -> list[Any]:
        return await consume_logs(self.server)


@pytest_asyncio.fixture
async def setup(make_gateway: Any, fake_dify: FakeDify) -> AsyncIterator[Setup]:
    server = await make_gateway(plugins=["faregate-adapter-openai", "faregate-adapter-dify"])
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.set_option("ModelRatio", {APP_MODEL: RATIO})
    await admin.set_option("CompletionRatio", {APP_MODEL: COMPLETION_RATIO})
    channel = await admin.add_channel(type=DIFY_CHANNEL_TYPE, base_url=fake_dify.base_url, key=FAKE_DIFY_KEY,
                                      models=APP_MODEL, name="dify")
    key = await admin.add_token(remain_quota=10_000_000)
    client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)
    yield Setup(server, fake_dify, client, admin, channel)
    await client.close()
    await admin.close()


CONVERSATION: list[Any] = [
    {"role": "system", "content": "You are a helpful app."},
    {"role": "user", "content": "What is Dify?"},
    {"role": "assistant", "content": "An LLM app platform."},
    {"role": "user", "content": [{"type": "text", "text": "Show me this"},
                                 {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
]
QUERY = ("SYSTEM: \nYou are a helpful app.\nUSER: \nWhat is Dify?\nASSISTANT: \nAn LLM app platform.\n"
         "USER: \nShow me this\n")


async def test_blocking_answer_is_converted_and_billed_on_metadata_usage(setup: Setup) -> None:
    reply = await setup.client.chat.completions.create(model=APP_MODEL, messages=CONVERSATION, user="alice")
    assert reply.choices[0].message.content == REPLY_PREFIX + "Show me this"
    assert reply.choices[0].finish_reason == "stop"
    sent = setup.fake.requests[-1]
    assert sent["path"] == "/v1/chat-messages" and sent["headers"]["authorization"] == f"Bearer {FAKE_DIFY_KEY}"
    assert sent["json"] == {"inputs": {}, "query": QUERY, "response_mode": "blocking", "user": "alice",
                            "auto_generate_name": False,
                            "files": [{"type": "image", "transfer_method": "remote_url",
                                       "url": "https://example.com/a.png"}]}
    (conversation,) = setup.fake.conversations
    assert reply.id == f"chatcmpl-{conversation}"  # the conversation's id, as new-api answers
    prompt, completion = words(QUERY), words(REPLY_PREFIX + "Show me this")
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (prompt, completion)
    (row,) = await setup.consume_logs()
    assert (row.prompt_tokens, row.completion_tokens) == (prompt, completion)
    assert row.quota == round((prompt + completion * COMPLETION_RATIO) * RATIO)
    assert json.loads(row.other)["usage_source"] == "upstream"


async def test_stream_is_converted_and_billed(setup: Setup) -> None:
    stream = await setup.client.chat.completions.create(
        model=APP_MODEL, messages=[{"role": "user", "content": "stream please"}], stream=True,
        stream_options={"include_usage": True})
    text, usage = "", None
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        usage = chunk.usage or usage
    assert text == REPLY_PREFIX + "stream please"
    sent = setup.fake.requests[-1]["json"]
    assert sent["response_mode"] == "streaming" and sent["query"] == "USER: \nstream please\n"
    assert sent["user"].startswith("faregate-")  # Dify requires a user: one per request when none is given
    assert usage is not None and usage.completion_tokens == words(text)
    (row,) = await setup.consume_logs()
    assert row.is_stream and row.completion_tokens == words(text)


async def test_a_conversation_is_continued_by_its_user(setup: Setup) -> None:
    await setup.client.chat.completions.create(model=APP_MODEL, user="bob",
                                               messages=[{"role": "user", "content": "remember 42"}])
    (conversation,) = setup.fake.conversations
    reply = await setup.client.chat.completions.create(
        model=APP_MODEL, user="bob", messages=[{"role": "user", "content": "what number?"}],
        extra_body={"conversation_id": conversation, "inputs": {"topic": "numbers"}})
    assert reply.choices[0].message.content == REPLY_PREFIX + "what number?"
    assert setup.fake.requests[-1]["json"]["inputs"] == {"topic": "numbers"}
    assert setup.fake.conversations[conversation][1] == ["USER: \nremember 42\n", "USER: \nwhat number?\n"]
    # another user cannot: Dify's 404 reaches the client
    with pytest.raises(openai.NotFoundError) as caught:
        await setup.client.chat.completions.create(model=APP_MODEL, user="mallory", extra_body={
            "conversation_id": conversation}, messages=[{"role": "user", "content": "what number?"}])
    assert "Conversation Not Exists" in caught.value.message


async def test_thinking_block_is_reasoning(setup: Setup) -> None:
    reply = await setup.client.chat.completions.create(model=APP_MODEL,
                                                       messages=[{"role": "user", "content": "think first"}])
    message = reply.choices[0].message
    assert message.content == REPLY_PREFIX + "think first"
    assert getattr(message, "reasoning_content", None) == THINKING_TEXT
    stream = await setup.client.chat.completions.create(model=APP_MODEL, stream=True,
                                                        messages=[{"role": "user", "content": "think again"}])
    text, reasoning = "", ""
    async for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            reasoning += getattr(chunk.choices[0].delta, "reasoning_content", None) or ""
    assert text == REPLY_PREFIX + "think again" and reasoning.strip() == THINKING_TEXT


@pytest.mark.parametrize(("extra", "param"), [
    ({"conversation_id": "not-a-uuid"}, "conversation_id"),
    ({"inputs": ["a"]}, "inputs"),
])
async def test_bad_dify_fields_are_400s_before_any_call(setup: Setup, extra: dict[str, Any], param: str) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await setup.client.chat.completions.create(model=APP_MODEL, extra_body=extra,
                                                   messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["param"] == param  # type: ignore[index]
    assert setup.fake.requests == []


async def test_inline_images_are_refused(setup: Setup) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await setup.client.chat.completions.create(model=APP_MODEL, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}])
    assert caught.value.body["param"] == "messages"  # type: ignore[index]
    assert setup.fake.requests == []


async def test_an_error_event_mid_stream_ends_the_stream_in_band(setup: Setup) -> None:
    setup.fake.push_fault(Fault("stream_error", after_chunks=4, delay=0.3, message="model quota exceeded"))
    stream = await setup.client.chat.completions.create(model=APP_MODEL, stream=True,
                                                        messages=[{"role": "user", "content": "go on then"}])
    text = ""
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            if chunk.choices:
                text += chunk.choices[0].delta.content or ""
    assert "model quota exceeded" in str(caught.value)
    assert text == "Hello from "  # the two words before the error


async def test_a_refused_app_key_is_a_401(setup: Setup) -> None:
    setup.fake.fail_next(401, "Access token is invalid")
    with pytest.raises(openai.AuthenticationError):
        await setup.client.chat.completions.create(model=APP_MODEL, messages=[{"role": "user", "content": "hi"}])
    assert await setup.consume_logs() == []


async def test_the_channel_test_asks_the_app_once_and_bills_nothing(setup: Setup) -> None:
    """``GET /api/channel/test/{id}``: one blocking chat message to the app (Dify serves
    chat only: other kinds are refused by name); logged as a test, costing nothing."""
    path = f"/api/channel/test/{setup.channel}"
    answer = await setup.admin.call("GET", path)
    assert answer["success"] is True and answer["time"] > 0
    (sent,) = setup.fake.requests
    assert sent["path"] == "/v1/chat-messages" and sent["json"]["response_mode"] == "blocking"
    assert sent["json"]["query"].endswith("hi\n")
    refused = await setup.admin.call("GET", path, params={"endpoint_type": "embeddings"})
    assert refused["success"] is False and "does not serve the embeddings endpoint" in refused["message"]
    setup.fake.fail_next(401, f"Access token is invalid: {FAKE_DIFY_KEY}")
    failed = await setup.admin.call("GET", path)
    assert failed["success"] is False and "401" in failed["message"] and FAKE_DIFY_KEY not in failed["message"]
    (row,) = await setup.consume_logs()
    assert row.quota == 0 and row.content == "channel test" and row.channel_id == setup.channel
