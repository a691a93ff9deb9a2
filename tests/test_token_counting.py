"""Exact token counts where a bill needs them (faregate.exchange.recount), with an in-test
counter (one token a word) so every number is known: nothing is counted while the upstream
reports usage; a bill without usage recounts the prompt with the format's own code (on the
loop when small, in a worker thread when big, the rule beyond the bound or when the counter
fails), counts a regular answer's text, and names the model the upstream was called with;
``count_tokens`` counts exactly, off the loop when big."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import pytest_asyncio

from faregate import hookimpl, jsonutil
from faregate.db import models as m
from faregate.exchange import recount
from faregate.plugins import load_plugins
from faregate.testing.harness import AdminClient, GatewayServer
from faregate.tokens import estimator
from faregate_adapter_openai.testing import Fault

OPENAI = "faregate-adapter-openai"
ANTHROPIC = "faregate-adapter-anthropic"
MODEL = "gpt-4o-mini"
SMALL = "five words in this prompt"
BIG = "word " * 8_000  # 40 KB of body: over recount.INLINE_SIZE


@dataclass
class Words:
    """One token a word; records the thread of every call, and may be told to fail."""

    name: str = "words"
    threads: list[int] = field(default_factory=list)
    fail: bool = False

    def count(self, text: str) -> int:
        self.threads.append(threading.get_ident())
        if self.fail:
            raise RuntimeError("this tokenizer is broken")
        return len(text.split())


@dataclass
class WordCounter:
    words: Words = field(default_factory=Words)
    models: tuple[str, ...] = (MODEL,)
    asked: list[str] = field(default_factory=list)

    def tokenizer(self, model: str) -> Words | None:
        self.asked.append(model)
        return self.words if model in self.models else None


def prompt(text: str, counter: Callable[[str], int] = lambda t: len(t.split())) -> int:
    return estimator.MESSAGE_OVERHEAD + counter(text)


def rule(text: str) -> int:
    return estimator.MESSAGE_OVERHEAD + estimator.text(text)


@dataclass
class Served:
    server: GatewayServer
    admin: AdminClient
    key: str
    counter: WordCounter

    async def post(self, path: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        async with httpx.AsyncClient(base_url=self.server.base_url, timeout=60) as http:
            return await http.post(path, json=body, headers={"Authorization": f"Bearer {self.key}", **headers})

    async def chat(self, text: str, *, stream: bool, model: str = MODEL) -> httpx.Response:
        return await self.post("/v1/chat/completions", {"model": model, "stream": stream,
                                                         "messages": [{"role": "user", "content": text}]})

    async def row(self) -> m.Log:
        for _ in range(300):
            await self.server.gateway.ledger.flush()
            rows = await m.Log.filter(type=m.LOG_CONSUME).order_by("id")
            if rows:
                (row,) = rows
                return row
            await asyncio.sleep(0.02)
        raise AssertionError("no consume row")


@pytest_asyncio.fixture
async def serve(make_gateway: Any, fake_openai: Any) -> AsyncIterator[Callable[..., Any]]:
    opened: list[AdminClient] = []
    servers: list[GatewayServer] = []

    async def factory(counter: WordCounter | None = None, *, adapters: tuple[str, ...] = (OPENAI,),
                      channel: dict[str, Any] | None = None) -> Served:
        counter = counter or WordCounter()

        class CounterPlugin:
            __name__ = "test-word-counter"

            @hookimpl
            def register_token_counters(self, register: Callable[[Any], None]) -> None:
                register(counter)

        server = await make_gateway(plugins=load_plugins(allow=list(adapters), extra=[CounterPlugin()]))
        servers.append(server)
        admin = AdminClient(server.base_url)
        opened.append(admin)
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, **{"models": MODEL, **(channel or {})})
        return Served(server, admin, await admin.add_token(remain_quota=50_000_000), counter)

    yield factory
    for admin in opened:
        await admin.close()
    for server in servers:
        await server.gateway.ledger.flush()


async def test_nothing_is_counted_while_the_upstream_reports_usage(serve: Any) -> None:
    served = await serve()
    assert (await served.chat(SMALL, stream=False)).status_code == 200
    assert (await served.chat(SMALL, stream=True)).status_code == 200
    await served.server.gateway.ledger.flush()
    rows = await m.Log.filter(type=m.LOG_CONSUME)
    assert [jsonutil.loads(r.other)["usage_source"] for r in rows] == ["upstream", "upstream"]
    assert served.counter.asked == [] and served.counter.words.threads == []


async def test_a_small_prompt_is_recounted_on_the_loop(serve: Any, fake_openai: Any) -> None:
    served = await serve()
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await served.chat(SMALL, stream=True)
    row = await served.row()
    assert row.prompt_tokens == prompt(SMALL) != rule(SMALL)
    assert jsonutil.loads(row.other)["token_counter"] == "words"
    assert set(served.counter.words.threads) == {threading.get_ident()}  # the test's loop: the gateway's


async def test_a_big_prompt_is_recounted_in_a_worker_thread(serve: Any, fake_openai: Any) -> None:
    served = await serve()
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await served.chat(BIG, stream=True)
    row = await served.row()  # settled after the stream, once the thread has counted
    assert row.prompt_tokens == prompt(BIG) != rule(BIG)
    assert served.counter.words.threads and threading.get_ident() not in served.counter.words.threads
    assert jsonutil.loads(row.other)["end_reason"] == "eof"


async def test_beyond_the_bound_the_rule_stays(serve: Any, fake_openai: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recount, "MAX_SIZE", 32 * 1024)
    served = await serve()
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await served.chat(BIG, stream=True)
    row = await served.row()
    assert row.prompt_tokens == rule(BIG)
    assert "token_counter" not in jsonutil.loads(row.other) and served.counter.words.threads == []


@pytest.mark.parametrize("text", [SMALL, BIG])
async def test_a_failing_tokenizer_keeps_the_rule(serve: Any, fake_openai: Any, text: str) -> None:
    served = await serve(WordCounter(Words(fail=True)))
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    assert (await served.chat(text, stream=True)).status_code == 200
    row = await served.row()
    assert row.prompt_tokens == rule(text) and "token_counter" not in jsonutil.loads(row.other)


async def test_a_regular_answer_without_usage_counts_its_text(serve: Any, fake_openai: Any) -> None:
    served = await serve()
    answer = "an answer of six words here"
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}]}
    fake_openai.push_fault(Fault("malformed_json", body=jsonutil.dumps(body)))
    assert (await served.chat(SMALL, stream=False)).status_code == 200
    row = await served.row()
    assert (row.prompt_tokens, row.completion_tokens) == (prompt(SMALL), 6)
    assert jsonutil.loads(row.other)["usage_source"] == "estimated"


async def test_the_model_counted_is_the_upstreams(serve: Any, fake_openai: Any) -> None:
    """A channel maps the client's ``house-model`` to the upstream's: that one's tokenizer counts."""
    served = await serve(channel={"models": "house-model", "model_mapping": jsonutil.dumps_str({"house-model": MODEL})})
    await served.admin.set_option("SelfUseModeEnabled", "true")  # the alias has no price of its own
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    await served.chat(SMALL, stream=True, model="house-model")
    row = await served.row()
    assert row.model_name == "house-model" and row.prompt_tokens == prompt(SMALL)
    assert served.counter.asked == [MODEL]


async def test_count_tokens_counts_exactly(serve: Any) -> None:
    served = await serve(adapters=(OPENAI, ANTHROPIC))

    async def count(model: str, text: str) -> int:
        resp = await served.post("/v1/messages/count_tokens", {"model": model,
                                                              "messages": [{"role": "user", "content": text}]},
                                 **{"anthropic-version": "2023-06-01"})
        assert resp.status_code == 200, resp.text
        tokens: int = resp.json()["input_tokens"]
        return tokens

    assert await count(MODEL, SMALL) == prompt(SMALL)
    assert threading.get_ident() in served.counter.words.threads  # small: on the loop
    served.counter.words.threads.clear()
    assert await count(MODEL, BIG) == prompt(BIG)
    assert threading.get_ident() not in served.counter.words.threads  # big: in a worker thread
    assert await count("claude-3-5-haiku-latest", SMALL) == rule(SMALL)  # a model no counter knows
    served.counter.words.fail = True
    assert await count(MODEL, SMALL) == rule(SMALL)  # a broken tokenizer: the estimate


# ---- the other endpoints of the OpenAI family (issue 12) -------------------------------------

RERANK, MODERATION = "a-reranker", "omni-moderation-latest"
NO_USAGE = {  # answers of each endpoint without usage, as a vendor may send them
    "completion": {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": MODEL, "choices": [
        {"text": "an answer of six words here", "index": 0, "logprobs": None, "finish_reason": "stop"}]},
    "embeddings": {"object": "list", "model": MODEL, "data": [{"object": "embedding", "index": i, "embedding": [0.5]}
                                                               for i in range(2)]},
    "rerank": {"results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}]},
    "compact": {"id": "resp_1", "object": "response.compaction", "created_at": 1, "output": []},
}


async def test_every_endpoint_without_usage_is_billed_on_the_exact_count(serve: Any, fake_openai: Any) -> None:
    """Text completions (regular, with the answer's text, and a stream cut short), embeddings
    (small on the loop, big in a worker thread), moderations (whose answers never report
    usage), rerank (whose answer shows the count) and compaction: the prompt as the endpoint
    estimates it, re-run with the model's tokenizer."""
    served = await serve(WordCounter(models=(MODEL, RERANK, MODERATION)),
                         channel={"models": f"{MODEL},{MODEL}-openai-compact,{RERANK},{MODERATION}"})
    await served.admin.set_option("SelfUseModeEnabled", "true")  # the test's models have no prices
    words = served.counter.words
    loop = threading.get_ident()

    async def billed(path: str, body: dict[str, Any], fault: Fault | None = None) -> tuple[m.Log, httpx.Response]:
        if fault is not None:
            fake_openai.push_fault(fault)
        resp = await served.post(path, body)
        assert resp.status_code == 200, resp.text
        for _ in range(300):
            await served.server.gateway.ledger.flush()
            rows = await m.Log.filter(type=m.LOG_CONSUME).order_by("-id").limit(1)
            if rows and rows[0].request_id not in seen:
                seen.add(rows[0].request_id)
                assert jsonutil.loads(rows[0].other)["usage_source"] == "estimated"
                return rows[0], resp
            await asyncio.sleep(0.02)
        raise AssertionError(f"no consume row for {path}")

    seen: set[str] = set()
    answer = NO_USAGE["completion"]["choices"][0]["text"]  # type: ignore[index]
    row, _ = await billed("/v1/completions", {"model": MODEL, "prompt": SMALL},
                          Fault("malformed_json", body=jsonutil.dumps(NO_USAGE["completion"])))
    assert (row.prompt_tokens, row.completion_tokens) == (5, 6) != (estimator.text(SMALL), estimator.chars(len(answer)))
    assert jsonutil.loads(row.other)["token_counter"] == "words"
    row, _ = await billed("/v1/completions", {"model": MODEL, "prompt": SMALL, "stream": True},
                          Fault("stream_cut", after_chunks=2))
    assert row.prompt_tokens == 5 and jsonutil.loads(row.other)["token_counter"] == "words"

    inputs = [SMALL, "two words"]
    row, _ = await billed("/v1/embeddings", {"model": MODEL, "input": inputs},
                          Fault("malformed_json", body=jsonutil.dumps(NO_USAGE["embeddings"])))
    assert row.prompt_tokens == 7 != sum(estimator.text(t) for t in inputs)
    assert jsonutil.loads(row.other)["token_counter"] == "words" and set(words.threads) == {loop}
    words.threads.clear()
    row, _ = await billed("/v1/embeddings", {"model": MODEL, "input": BIG},
                          Fault("malformed_json", body=jsonutil.dumps(NO_USAGE["embeddings"])))
    assert row.prompt_tokens == 8_000 and words.threads and loop not in words.threads

    row, _ = await billed("/v1/moderations", {"model": MODERATION, "input": SMALL})
    assert row.prompt_tokens == 5 != estimator.text(SMALL)
    assert jsonutil.loads(row.other)["token_counter"] == "words"

    query, documents = "which one", ["first document here", "second"]
    row, resp = await billed("/v1/rerank", {"model": RERANK, "query": query, "documents": documents},
                             Fault("malformed_json", body=jsonutil.dumps(NO_USAGE["rerank"])))
    assert row.prompt_tokens == resp.json()["usage"]["prompt_tokens"] == 6
    assert 6 != estimator.text(query) + sum(estimator.text(d) for d in documents)

    row, _ = await billed("/v1/responses/compact", {"model": MODEL, "input": SMALL},
                          Fault("malformed_json", body=jsonutil.dumps(NO_USAGE["compact"])))
    assert row.prompt_tokens == prompt(SMALL) != rule(SMALL)  # the string input is one message
    assert jsonutil.loads(row.other)["token_counter"] == "words"
    assert served.counter.asked.count(MODEL) == 5  # compaction's upstream model: the base name


async def test_gemini_embeddings_without_usage_are_billed_on_the_exact_count(serve: Any, fake_gemini: Any) -> None:
    """``embedContent`` and ``batchEmbedContents`` (the Gemini plugin's driver) settle a usage-less
    answer on the input as the format counts it, re-run with the model's tokenizer, as the OpenAI
    plugin's embeddings do (a Gemini model has no tokenizer in this repository: a counter's plugin
    may bring one)."""
    from faregate_adapter_gemini.testing import EMBEDDING
    from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY

    served = await serve(WordCounter(models=(EMBEDDING,)), adapters=(OPENAI, "faregate-adapter-gemini"))
    await served.admin.add_channel(base_url=fake_gemini.base_url, type=24, key=FAKE_GEMINI_KEY, name="gemini",
                                   models=EMBEDDING)
    await served.admin.set_option("SelfUseModeEnabled", "true")  # the price is not the point
    fake_gemini.embedding_usage = False
    one = {"content": {"parts": [{"text": SMALL}]}}
    batch = {"requests": [{"model": f"models/{EMBEDDING}", "content": {"parts": [{"text": t}]}}
                          for t in (SMALL, "two words")]}
    expected = []
    for action, body in ((":embedContent", one), (":batchEmbedContents", batch)):
        resp = await served.post(f"/v1beta/models/{EMBEDDING}{action}", body, **{"x-goog-api-key": served.key})
        assert resp.status_code == 200, resp.text
        expected.append(prompt(SMALL) if action == ":embedContent" else prompt(SMALL) + prompt("two words"))
    for _ in range(300):
        await served.server.gateway.ledger.flush()
        rows = await m.Log.filter(type=m.LOG_CONSUME).order_by("id")
        if len(rows) == 2:
            break
        await asyncio.sleep(0.02)
    assert [r.prompt_tokens for r in rows] == expected != [rule(SMALL), rule(SMALL) + rule("two words")]
    assert [jsonutil.loads(r.other)["token_counter"] for r in rows] == ["words", "words"]
    assert [jsonutil.loads(r.other)["usage_source"] for r in rows] == ["estimated", "estimated"]
