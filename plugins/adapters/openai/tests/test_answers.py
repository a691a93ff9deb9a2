"""The raw-answer validator (:mod:`faregate_adapter_openai.testing.answers`) the SDK tests
lean on where the SDK cannot validate strictly: it refuses each way an answer can be wrong,
reads what a recorded client received (streams included, gzip undone), decodes base64
embeddings before the spec sees them, and holds the fake Codex search to Codex's shape."""

from __future__ import annotations

import asyncio
import base64
import gzip
import struct
from typing import Any

import httpx
import jsonschema
import orjson
import pytest

from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.answers import Answer, Recorder, check_answer
from faregate_adapter_openai.testing.chat import REPLY_PREFIX

JSON = "application/json"
SSE = "text/event-stream"
CHAT = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x", "refusal": None},
                     "finish_reason": "stop", "logprobs": None}]}
EVENT = {"type": "response.in_progress", "sequence_number": 1, "response": {}}


def answer(path: str, body: Any, content_type: str = JSON, status: int = 200, method: str = "POST") -> Answer:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return Answer(method, path, status, content_type, bytearray(data))


def sse(*events: Any) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def floats(*values: float) -> str:
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()


def embeddings(embedding: Any) -> dict[str, Any]:
    return {"object": "list", "model": "m", "data": [{"object": "embedding", "index": 0, "embedding": embedding}],
            "usage": {"prompt_tokens": 1, "total_tokens": 1}}


WRONG = [
    pytest.param(answer("/v1/chat/completions", {**CHAT, "choices": None}), id="chat-choices"),
    pytest.param(answer("/v1/chat/completions", CHAT, content_type="text/plain"), id="json-as-text"),
    pytest.param(answer("/v1/chat/completions", sse({"object": "chat.completion.chunk"}), SSE), id="chunk"),
    pytest.param(answer("/v1/chat/completions", b"data: [DONE]\n\n", SSE), id="empty-stream"),
    pytest.param(answer("/v1/completions", sse({"object": "text_completion", "choices": []}), SSE),
                 id="completion-chunk"),
    pytest.param(answer("/v1/responses", sse(EVENT), SSE), id="responses-event"),
    pytest.param(answer("/v1/embeddings", embeddings("not base64!")), id="base64-garbage"),
    pytest.param(answer("/v1/embeddings", embeddings(base64.b64encode(b"abc").decode())), id="base64-not-float32"),
    pytest.param(answer("/v1/moderations", {"id": "m"}), id="moderation"),
    pytest.param(answer("/v1/rerank", {"results": [{"index": 0, "relevance_score": 0.5}]}), id="rerank-usage"),
    pytest.param(answer("/v1/alpha/search", {"results": []}), id="search-output"),
    pytest.param(answer("/dashboard/billing/usage", {"object": "list"}, method="GET"), id="usage"),
    pytest.param(answer("/v1/dashboard/billing/subscription", {"object": "billing_subscription"}, method="GET"),
                 id="subscription"),
    pytest.param(answer("/v1/audio/speech", b"", "audio/wav"), id="no-audio"),
    pytest.param(answer("/v1/audio/speech", b"{}", JSON), id="speech-as-json"),
    pytest.param(answer("/v1/files", {"error": {"message": "x"}}, status=501, method="GET"), id="error-shape"),
    pytest.param(answer("/v1/unknown", {}), id="unknown-path"),
]


@pytest.mark.parametrize("wrong", WRONG)
def test_each_wrong_answer_is_refused(wrong: Answer) -> None:
    with pytest.raises((jsonschema.ValidationError, AssertionError, orjson.JSONDecodeError)):
        check_answer(wrong)


def test_base64_embeddings_are_decoded_before_the_spec_sees_them() -> None:
    checked = check_answer(answer("/v1/engines/m/embeddings", embeddings(floats(0.5, -0.25))))
    assert checked["data"][0]["embedding"] == [0.5, -0.25]
    assert check_answer(answer("/v1/embeddings", embeddings([0.5])))["data"][0]["embedding"] == [0.5]


def test_a_gzipped_error_is_read_as_the_client_reads_it() -> None:
    error = {"error": {"message": "no", "type": "new_api_error", "param": None, "code": "api_not_implemented"}}
    gzipped = Answer("GET", "/v1/files", 501, JSON, bytearray(gzip.compress(orjson.dumps(error))), encoding="gzip")
    assert check_answer(gzipped) == error


async def test_the_recorder_keeps_what_each_client_received_streams_included() -> None:
    recorder = Recorder()
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    async with FakeOpenAI() as fake:
        async with httpx.AsyncClient(transport=recorder.async_transport()) as http:
            async with http.stream("POST", fake.base_url + "/v1/chat/completions", json={**body, "stream": True}) as r:
                streamed = b"".join([chunk async for chunk in r.aiter_bytes()])
            search = await http.post(fake.base_url + "/backend-api/codex/alpha/search",
                                     json={"model": "gpt-5-codex", "id": "s-1", "input": "q"},
                                     headers={"chatgpt-account-id": "a"})

        def sync_call() -> httpx.Response:
            with httpx.Client(transport=recorder.transport()) as sync:
                return sync.post(fake.base_url + "/v1/chat/completions", json=body)

        plain = await asyncio.to_thread(sync_call)
    assert search.status_code == 200
    assert recorder.answers[0].data() == streamed and recorder.answers[2].data() == plain.content
    recorder.answers[1].path = "/v1/alpha/search"  # the gateway's path of Codex's search
    chunks, searched, whole = recorder.check()
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == REPLY_PREFIX + "hi"
    assert searched["output"]  # the fake answers in the shape Codex reads
    assert whole["choices"][0]["message"]["content"] == REPLY_PREFIX + "hi"
    assert recorder.answers == []
