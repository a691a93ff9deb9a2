"""A real gateway with the plugin (through its entry point) and the OpenAI / Anthropic
adapters on the fake OpenAI upstream: answers without usage are billed on tiktoken's exact
count of the prompt (and of a regular answer's text); a gateway without the plugin, built
in the same process, keeps the estimator's rule; models of other vendors keep it too; the
Anthropic ``count_tokens`` endpoint counts an OpenAI model exactly."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest_asyncio

from faregate.api import estimator
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.testing.logs import Log, consume_logs
from faregate_adapter_openai.testing import Fault
from faregate_tokenizer_tiktoken import offline, preload

OPENAI = "faregate-adapter-openai"
ANTHROPIC = "faregate-adapter-anthropic"
TIKTOKEN = "faregate-tokenizer-tiktoken"
MODEL = "gpt-4o-mini"
OTHER_VENDOR = "claude-3-5-haiku-latest"  # priced by default
#: text whose exact count is far from the rule's (a CJK character is a token to the rule)
PROMPT = "请用一句话解释一下为什么天空是蓝色的，并且给出一个简单的例子。" * 8


def exact(text: str, encoding: str = "o200k_base") -> int:
    return len(offline.encoding(encoding).encode_ordinary(text))


def chat_prompt(text: str, encoding: str = "o200k_base") -> int:
    """The OpenAI format's count of one user message: its overhead plus its text."""
    return estimator.MESSAGE_OVERHEAD + exact(text, encoding)


def rule_prompt(text: str) -> int:
    return estimator.MESSAGE_OVERHEAD + estimator.text(text)


@dataclass
class Served:
    server: GatewayServer
    admin: AdminClient
    key: str

    async def chat(self, model: str, content: str, *, stream: bool) -> httpx.Response:
        body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": content}]}
        async with httpx.AsyncClient(base_url=self.server.base_url, timeout=60) as http:
            return await http.post("/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {self.key}"})

    async def row(self) -> Log:
        """The one consume row, once written (a big prompt's bill settles a moment after)."""
        for _ in range(200):
            rows = await consume_logs(self.server)
            if rows:
                assert len(rows) == 1
                return rows[0]
            await asyncio.sleep(0.02)
        raise AssertionError("no consume row")


@pytest_asyncio.fixture(autouse=True)
async def built() -> None:
    """The encodings built, as after the first bills that needed them (or with
    ``tiktoken_preload``): what these tests bill is the exact count."""
    await asyncio.to_thread(preload)


@pytest_asyncio.fixture
async def serve(make_gateway: Callable[..., Awaitable[GatewayServer]],
                fake_openai: Any) -> AsyncIterator[Callable[..., Awaitable[Served]]]:
    opened: list[AdminClient] = []
    servers: list[GatewayServer] = []

    async def factory(*plugins: str) -> Served:
        server = await make_gateway(plugins=list(plugins))
        servers.append(server)
        admin = AdminClient(server.base_url)
        opened.append(admin)
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},gpt-4,{OTHER_VENDOR}")
        return Served(server, admin, await admin.add_token(remain_quota=50_000_000))

    yield factory
    for admin in opened:
        await admin.close()
    for server in servers:
        await server.gateway.ledger.flush()


async def test_a_stream_cut_before_usage_is_billed_on_the_exact_prompt(serve: Any, fake_openai: Any) -> None:
    assert chat_prompt(PROMPT) != rule_prompt(PROMPT)  # the test can tell them apart
    with_plugin = await serve(OPENAI, TIKTOKEN)
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    resp = await with_plugin.chat(MODEL, PROMPT, stream=True)
    assert resp.status_code == 200 and "[DONE]" not in resp.text
    row = await with_plugin.row()
    other = json.loads(row.other)
    assert (other["end_reason"], other["usage_source"]) == ("eof", "estimated")
    assert row.prompt_tokens == chat_prompt(PROMPT)
    assert other["token_counter"] == "tiktoken/o200k_base"
    assert 0 < row.completion_tokens  # streamed output: counted from its characters, as it passed


async def test_without_the_plugin_the_rule_stays(serve: Any, fake_openai: Any) -> None:
    """A gateway built without it, in the same test process (after one with it): the rule."""
    without = await serve(OPENAI)
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await without.chat(MODEL, PROMPT, stream=True)
    row = await without.row()
    assert row.prompt_tokens == rule_prompt(PROMPT)
    assert "token_counter" not in json.loads(row.other)


async def test_a_big_prompt_is_counted_exactly_after_the_stream(serve: Any, fake_openai: Any) -> None:
    """Over the inline bound (16 KB of body): counted in a worker thread, settled after."""
    served = await serve(OPENAI, TIKTOKEN)
    big = PROMPT * 60  # ~50 KB of UTF-8
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await served.chat(MODEL, big, stream=True)
    row = await served.row()
    assert row.prompt_tokens == chat_prompt(big) != rule_prompt(big)
    assert json.loads(row.other)["token_counter"] == "tiktoken/o200k_base"


async def test_a_regular_answer_without_usage_counts_prompt_and_output(serve: Any, fake_openai: Any) -> None:
    served = await serve(OPENAI, TIKTOKEN)
    answer = "天空之所以是蓝色的，是因为瑞利散射。 The sky is blue because of Rayleigh scattering."
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}
    fake_openai.push_fault(Fault("malformed_json", body=json.dumps(body).encode()))
    resp = await served.chat("gpt-4", PROMPT, stream=False)
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == answer
    row = await served.row()
    other = json.loads(row.other)
    assert other["usage_source"] == "estimated" and other["token_counter"] == "tiktoken/cl100k_base"
    assert row.prompt_tokens == chat_prompt(PROMPT, "cl100k_base")
    assert row.completion_tokens == exact(answer, "cl100k_base") != estimator.chars(len(answer))


async def test_other_vendors_models_keep_the_rule(serve: Any, fake_openai: Any) -> None:
    served = await serve(OPENAI, TIKTOKEN)
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await served.chat(OTHER_VENDOR, PROMPT, stream=True)
    row = await served.row()
    assert row.prompt_tokens == rule_prompt(PROMPT)
    assert "token_counter" not in json.loads(row.other)


async def test_count_tokens_counts_openai_models_exactly(serve: Any) -> None:
    served = await serve(OPENAI, ANTHROPIC, TIKTOKEN)
    headers = {"x-api-key": served.key, "anthropic-version": "2023-06-01"}

    async def count(model: str) -> int:
        body = {"model": model, "system": "Answer briefly.", "messages": [{"role": "user", "content": PROMPT}]}
        async with httpx.AsyncClient(base_url=served.server.base_url) as http:
            resp = await http.post("/v1/messages/count_tokens", json=body, headers=headers)
        assert resp.status_code == 200, resp.text
        tokens: int = resp.json()["input_tokens"]
        return tokens

    assert await count(MODEL) == exact("Answer briefly.") + estimator.MESSAGE_OVERHEAD + exact(PROMPT)
    assert await count(OTHER_VENDOR) == (estimator.text("Answer briefly.") + estimator.MESSAGE_OVERHEAD
                                         + estimator.text(PROMPT))


async def test_embeddings_without_usage_are_counted_exactly(serve: Any, fake_openai: Any) -> None:
    """``text-embedding-*`` models count with ``cl100k_base``: an embeddings answer without usage
    is billed on tiktoken's count of the input."""
    served = await serve(OPENAI, TIKTOKEN)
    await served.admin.add_channel(base_url=fake_openai.base_url, models="text-embedding-3-small", name="embed")
    answer = {"object": "list", "model": "text-embedding-3-small",
              "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}]}
    fake_openai.push_fault(Fault("malformed_json", body=json.dumps(answer).encode()))
    async with httpx.AsyncClient(base_url=served.server.base_url, timeout=60) as http:
        resp = await http.post("/v1/embeddings", json={"model": "text-embedding-3-small", "input": PROMPT},
                               headers={"Authorization": f"Bearer {served.key}"})
    assert resp.status_code == 200, resp.text
    row = await served.row()
    other = json.loads(row.other)
    assert other["usage_source"] == "estimated" and other["token_counter"] == "tiktoken/cl100k_base"
    assert row.prompt_tokens == exact(PROMPT, "cl100k_base") != estimator.text(PROMPT)
