"""Legacy text completions (``POST /v1/completions``) through the gateway with the official
``openai`` SDK (strict response validation, async and sync) and the fake OpenAI upstream,
which validates every request against OpenAI's ``CreateCompletionRequest``: regular and
streamed answers, ``n`` / ``echo`` / ``suffix`` / ``stop`` / ``max_tokens`` and batched
prompts, OpenAI-shaped 400s for bad input, billing on upstream usage or the estimate,
failover, streams cut, broken or left mid-way, and which channel types serve the endpoint."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import httpx
import openai
import pytest

from faregate import jsonutil
from faregate.testing.harness import AdminClient
from faregate_adapter_openai.testing import FakeOpenAI, Fault
from faregate_adapter_openai.testing.answers import Recorder
from faregate_adapter_openai.testing.completions import COMPLETION_PREFIX
from faregate_adapter_openai.testing.schema import validate, validate_error
from faregate_adapter_openai.testing.server import DEEPSEEK

MODEL = "gpt-3.5-turbo-instruct"
RATIO, COMPLETION = 0.75, 1.33  # new-api's ratios of gpt-3.5-turbo-instruct
COMPLETION_RESPONSE = "CreateCompletionResponse"


def quota(prompt: int, completion: int) -> int:
    return max(1, round((prompt + completion * COMPLETION) * RATIO))


def fake_text(prompt: str, choice: int = 0, max_tokens: int = 16) -> str:
    """What the fake generates (its documented rule), cut at ``max_tokens``."""
    text = COMPLETION_PREFIX + prompt[-80:] + (f" #{choice}" if choice else "")
    return text[: max_tokens * 4]


async def prices(admin: Any) -> None:
    await admin.set_option("ModelRatio", {MODEL: RATIO, "davinci-002": 1.0, "deepseek-chat": 0.135})
    await admin.set_option("CompletionRatio", {MODEL: COMPLETION})


@pytest.fixture
async def client(gateway: Any, admin: Any, fake_openai: Any) -> Any:
    await prices(admin)
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},davinci-002",
                            model_mapping='{"davinci-002": "' + MODEL + '"}')
    key = await admin.add_token(remain_quota=5_000_000)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    sdk.key = key  # type: ignore[attr-defined]
    yield sdk
    await sdk.close()


def streaming_sdk(gateway: Any, key: str, recorder: Recorder) -> openai.AsyncOpenAI:
    """A client for streams without strict validation: the SDK's ``Completion`` type insists on a
    finish reason, which OpenAI's own chunks carry only at the end (null before). Every raw chunk
    it receives is kept by ``recorder`` and checked against the spec instead (``recorder.check()``:
    each chunk vs ``CreateCompletionResponse``, its null finish reason and usage allowed)."""
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                              http_client=httpx.AsyncClient(transport=recorder.async_transport()))



async def post(gateway: Any, key: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        return await http.post("/v1/completions", json=body, headers={"Authorization": f"Bearer {key}"})


async def test_regular_completion_is_passed_through_and_billed_on_usage(client: Any, gateway: Any,
                                                                        fake_openai: Any) -> None:
    raw = await client.completions.with_raw_response.create(model=MODEL, prompt="Say this is a test",
                                                            max_tokens=7, temperature=0)
    body = validate(COMPLETION_RESPONSE, raw.http_response.json())
    completion = raw.parse()
    assert completion.object == "text_completion" and completion.model == MODEL
    assert completion.choices[0].text == fake_text("Say this is a test", max_tokens=7)
    assert completion.choices[0].finish_reason == "length"
    assert raw.http_response.headers["x-request-id"]
    # same format: the client's bytes went upstream untouched
    sent = fake_openai.requests[-1]
    assert sent["path"] == "/v1/completions" and sent["body"] == raw.http_request.content
    (row,) = await gateway.consume_logs()
    usage = body["usage"]
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (
        MODEL, usage["prompt_tokens"], usage["completion_tokens"])
    assert row.quota == quota(usage["prompt_tokens"], usage["completion_tokens"])
    other = jsonutil.loads(row.other)
    assert other["usage_source"] == "upstream" and other["request_path"] == "/v1/completions"


async def test_the_sync_sdk_works_too(client: Any, gateway: Any) -> None:
    def call() -> Any:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=client.key, max_retries=0,
                           _strict_response_validation=True) as sync:
            return sync.completions.create(model=MODEL, prompt="from a thread", max_tokens=30)

    completion = await asyncio.to_thread(call)
    assert completion.choices[0].text == fake_text("from a thread", max_tokens=30)
    assert completion.choices[0].finish_reason == "stop"  # shorter than 30 tokens
    assert len(await gateway.consume_logs()) == 1


async def test_n_echo_suffix_stop_and_batched_prompts_are_honoured(client: Any, fake_openai: Any) -> None:
    prompts = ["The first prompt", "A second one"]
    completion = await client.completions.create(model=MODEL, prompt=prompts, n=2, echo=True, max_tokens=40,
                                                 suffix="THE END", logprobs=2)
    validate(COMPLETION_RESPONSE, completion.model_dump(exclude_unset=True))
    texts = {c.index: c.text for c in completion.choices}
    assert sorted(texts) == [0, 1, 2, 3]  # two choices per prompt, numbered prompt by prompt
    for p, prompt in enumerate(prompts):
        for j in range(2):
            new = COMPLETION_PREFIX + prompt + (f" #{j}" if j else "") + " … THE END"
            assert texts[p * 2 + j] == prompt + new[:160]  # echo: the prompt first
    assert completion.choices[0].logprobs is not None and completion.choices[0].logprobs.tokens
    stopped = await client.completions.create(model=MODEL, prompt="cut me here", stop=["so the", "zzz"])
    assert stopped.choices[0].text == " ... and " and stopped.choices[0].finish_reason == "stop"
    assert fake_openai.requests[-1]["json"]["stop"] == ["so the", "zzz"]


async def test_token_prompts_and_model_mapping(client: Any, gateway: Any, fake_openai: Any) -> None:
    completion = await client.completions.create(model="davinci-002", prompt=[[1, 2, 3], [4, 5]], max_tokens=3)
    assert fake_openai.requests[-1]["json"]["model"] == MODEL  # the channel's name for it
    assert fake_openai.requests[-1]["json"]["prompt"] == [[1, 2, 3], [4, 5]]
    assert completion.usage is not None and completion.usage.prompt_tokens == 5
    (row,) = await gateway.consume_logs()
    assert row.model_name == "davinci-002" and jsonutil.loads(row.other)["upstream_model_name"] == MODEL


async def test_stream_without_include_usage_hides_the_usage_chunk_but_bills_it(client: Any, gateway: Any,
                                                                               fake_openai: Any) -> None:
    recorder = Recorder()
    async with streaming_sdk(gateway, client.key, recorder) as sdk:
        stream = await sdk.completions.create(model=MODEL, prompt="stream this", max_tokens=30, stream=True)
        chunks = [chunk async for chunk in stream]
    (raw_chunks,) = recorder.check()
    assert len(raw_chunks) == len(chunks)
    assert chunks and all(c.object == "text_completion" and c.choices and c.usage is None for c in chunks)
    assert "".join(c.choices[0].text for c in chunks) == fake_text("stream this", max_tokens=30)
    assert chunks[-1].choices[0].finish_reason == "stop"
    # the gateway asked for the usage chunk on the client's behalf
    assert fake_openai.requests[-1]["json"]["stream_options"] == {"include_usage": True}
    (row,) = await gateway.consume_logs()
    other = jsonutil.loads(row.other)
    assert row.is_stream and other["usage_source"] == "upstream" and other["end_reason"] == "done"
    assert row.completion_tokens == math.ceil(len(fake_text("stream this", max_tokens=30)) / 4)


async def test_stream_with_include_usage_shows_it_once(client: Any, gateway: Any) -> None:
    recorder = Recorder()
    async with streaming_sdk(gateway, client.key, recorder) as sdk:
        stream = await sdk.completions.create(model=MODEL, prompt="count me", stream=True,
                                              stream_options={"include_usage": True})
        chunks = [chunk async for chunk in stream]
    (raw_chunks,) = recorder.check()
    assert len(raw_chunks) == len(chunks)
    usages = [c.usage for c in chunks if c.usage is not None]
    assert not chunks[-1].choices and chunks[-1].usage is not None  # the usage chunk closes the stream
    assert len(usages) == 1
    validate("CompletionUsage", usages[0].model_dump(exclude_unset=True))
    (row,) = await gateway.consume_logs()
    assert (row.prompt_tokens, row.completion_tokens) == (usages[0].prompt_tokens, usages[0].completion_tokens)
    assert row.quota == quota(usages[0].prompt_tokens, usages[0].completion_tokens)


BAD_INPUT: list[tuple[dict[str, Any], str]] = [
    ({"prompt": "x"}, "model"),
    ({"model": MODEL}, "prompt"),
    ({"model": MODEL, "prompt": ""}, "prompt"),
    ({"model": MODEL, "prompt": []}, "prompt"),
    ({"model": MODEL, "prompt": [1, "mixed"]}, "prompt"),
    ({"model": MODEL, "prompt": [[1], []]}, "prompt"),
    ({"model": MODEL, "prompt": [-1]}, "prompt"),
    ({"model": MODEL, "prompt": {"text": "x"}}, "prompt"),
    ({"model": MODEL, "prompt": "x", "max_tokens": -1}, "max_tokens"),
    ({"model": MODEL, "prompt": "x", "max_tokens": 1.5}, "max_tokens"),
    ({"model": MODEL, "prompt": "x", "temperature": 2.5}, "temperature"),
    ({"model": MODEL, "prompt": "x", "top_p": -0.1}, "top_p"),
    ({"model": MODEL, "prompt": "x", "n": 0}, "n"),
    ({"model": MODEL, "prompt": "x", "n": 129}, "n"),
    ({"model": MODEL, "prompt": "x", "best_of": 21}, "best_of"),
    ({"model": MODEL, "prompt": "x", "n": 3, "best_of": 2}, "best_of"),
    ({"model": MODEL, "prompt": "x", "best_of": 2, "stream": True}, "best_of"),
    ({"model": MODEL, "prompt": "x", "logprobs": 6}, "logprobs"),
    ({"model": MODEL, "prompt": "x", "presence_penalty": 2.1}, "presence_penalty"),
    ({"model": MODEL, "prompt": "x", "frequency_penalty": True}, "frequency_penalty"),
    ({"model": MODEL, "prompt": "x", "seed": 2**64}, "seed"),
    ({"model": MODEL, "prompt": "x", "stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"model": MODEL, "prompt": "x", "stop": 3}, "stop"),
    ({"model": MODEL, "prompt": "x", "suffix": 5}, "suffix"),
    ({"model": MODEL, "prompt": "x", "echo": "yes"}, "echo"),
    ({"model": MODEL, "prompt": "x", "stream": "true"}, "stream"),
    ({"model": MODEL, "prompt": "x", "user": ["u"]}, "user"),
    ({"model": MODEL, "prompt": "x", "logit_bias": {"abc": 1}}, "logit_bias"),
    ({"model": MODEL, "prompt": "x", "logit_bias": {"50256": 101}}, "logit_bias"),
    ({"model": MODEL, "prompt": "x", "stream_options": {"include_usage": True}}, "stream_options"),
    ({"model": MODEL, "prompt": "x", "stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options"),
]


async def test_bad_input_is_a_400_naming_the_field(client: Any, gateway: Any, fake_openai: Any) -> None:
    for body, param in BAD_INPUT:
        resp = await post(gateway, client.key, body)
        assert resp.status_code == 400, (body, resp.text)
        assert validate_error(resp.json())["error"]["param"] == param, (body, resp.text)
    assert (await post(gateway, client.key, [1, 2])).status_code == 400  # not an object
    assert not fake_openai.requests  # refused before any upstream call
    assert await gateway.consume_logs() == []


async def test_an_answer_without_usage_is_billed_on_the_estimate(make_gateway: Any, fake_openai: Any) -> None:
    """The estimator's rule, on a gateway without a tokenizer plugin (with one that knows the model,
    its exact count: tests/test_token_counting.py)."""
    gateway = await make_gateway(plugins=["faregate-adapter-openai"])
    admin = AdminClient(gateway.base_url)
    await admin.setup_root()
    await prices(admin)
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    answer = {"id": "cmpl-1", "object": "text_completion", "created": 1, "model": MODEL,
              "choices": [{"text": "x" * 40, "index": 0, "logprobs": None, "finish_reason": "stop"}]}
    fake_openai.push_fault(Fault("status", status=200, body=jsonutil.dumps(answer)))
    async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0,
                                  _strict_response_validation=True) as client:
        completion = await client.completions.create(model=MODEL, prompt="y" * 80)
    await admin.close()
    assert completion.choices[0].text == "x" * 40
    (row,) = await gateway.consume_logs()
    assert (row.prompt_tokens, row.completion_tokens) == (20, 10)  # 4 characters a token
    assert jsonutil.loads(row.other)["usage_source"] == "estimated"
    assert row.quota == quota(20, 10)


async def test_failover_on_an_upstream_500(gateway: Any, admin: Any, fake_openai: Any) -> None:
    await prices(admin)
    await admin.set_option("RetryTimes", 1)
    async with FakeOpenAI() as first:
        id_first = await admin.add_channel(base_url=first.base_url, models=MODEL, name="first", priority=10)
        id_second = await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, name="second")
        first.fail_next(500, "boom")
        key = await admin.add_token(remain_quota=5_000_000)
        async with openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                                      _strict_response_validation=True) as sdk:
            completion = await sdk.completions.create(model=MODEL, prompt="fail over")
        assert completion.choices[0].text == fake_text("fail over")
        assert [r["path"] for r in first.requests] == ["/v1/completions"]
    (row,) = await gateway.consume_logs()
    assert row.channel_id == id_second
    assert jsonutil.loads(row.other)["admin_info"]["use_channel"] == [id_first, id_second]


async def stream_raw(gateway: Any, key: str, body: dict[str, Any]) -> str:
    async with httpx.AsyncClient() as http, http.stream(
            "POST", gateway.base_url + "/v1/completions", headers={"Authorization": f"Bearer {key}"},
            json=body) as resp:
        assert resp.status_code == 200
        return (await resp.aread()).decode()


async def test_a_stream_cut_midway_gets_an_inband_error_and_bills_what_was_seen(client: Any, gateway: Any,
                                                                                 fake_openai: Any) -> None:
    fake_openai.push_fault(Fault("stream_cut", after_chunks=3))
    text = await stream_raw(gateway, client.key, {"model": MODEL, "prompt": "a longer prompt to stream out",
                                                  "max_tokens": 40, "stream": True})
    events = [jsonutil.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert [e["object"] for e in events[:3]] == ["text_completion"] * 3
    assert validate_error(events[-1])["error"]["code"] in ("stream_eof", "stream_broken") and "[DONE]" not in text
    (row,) = await gateway.consume_logs()
    other = jsonutil.loads(row.other)
    assert other["end_reason"] == "eof" and other["usage_source"] == "estimated"
    seen = sum(len(e["choices"][0]["text"]) for e in events[:3])
    assert row.completion_tokens == math.ceil(seen / 4) and row.quota > 0


async def test_an_upstream_error_mid_stream_is_passed_inband(client: Any, gateway: Any, fake_openai: Any) -> None:
    error = {"error": {"message": "The server is overloaded", "type": "server_error", "param": None, "code": None}}
    fake_openai.push_fault(Fault("malformed_chunk", after_chunks=2, delay=0.1, body=jsonutil.dumps(error)))
    text = await stream_raw(gateway, client.key, {"model": MODEL, "prompt": "p", "stream": True})
    last = jsonutil.loads([line for line in text.splitlines() if line.startswith("data: {")][-1][6:])
    assert validate_error(last)["error"]["message"] == "The server is overloaded"
    (row,) = await gateway.consume_logs()
    assert jsonutil.loads(row.other)["end_reason"] == "upstream_error"


async def test_a_client_leaving_mid_stream_is_billed_on_the_upstreams_usage(client: Any, gateway: Any,
                                                                           fake_openai: Any) -> None:
    fake_openai.push_fault(Fault("stall", after_chunks=2, delay=1))
    async with httpx.AsyncClient() as http, http.stream(
            "POST", gateway.base_url + "/v1/completions", headers={"Authorization": f"Bearer {client.key}"},
            json={"model": MODEL, "prompt": "bye now", "max_tokens": 30, "stream": True}) as resp:
        async for _ in resp.aiter_bytes():
            break  # the client goes away after the first bytes
    for _ in range(100):
        rows = await gateway.consume_logs()
        if rows:
            break
        await asyncio.sleep(0.05)
    (row,) = rows
    other = jsonutil.loads(row.other)
    assert other["end_reason"] == "client_gone" and other["usage_source"] == "upstream"
    assert row.completion_tokens == math.ceil(len(fake_text("bye now", max_tokens=30)) / 4)
    assert all(lease.reserved == 0 for lease in gateway.gateway.ledger.leases.values())


async def test_which_channel_types_serve_completions(gateway: Any, admin: Any, fake_openai: Any,
                                                     fake_anthropic: Any) -> None:
    """DeepSeek (43) serves them at its FIM beta path (the fake made DeepSeek answers there only,
    with DeepSeek's field list); an Anthropic channel never does."""
    await prices(admin)
    # priced, so that the endpoint is what refuses it (a stored ModelRatio may replace the defaults)
    await admin.set_option("ModelRatio", {MODEL: RATIO, "deepseek-chat": 0.135, "claude-sonnet-4-5": 1.0})
    await admin.add_channel(base_url=fake_anthropic.base_url, models=f"claude-sonnet-4-5,{MODEL}", type=14,
                            name="anthropic", priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, name="openai")
    key = await admin.add_token(remain_quota=5_000_000)
    async with FakeOpenAI(models=["deepseek-chat"], vendor=DEEPSEEK) as deepseek, \
            openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                               _strict_response_validation=True) as sdk:
        await admin.add_channel(base_url=deepseek.base_url, models="deepseek-chat", type=43, name="ds")
        assert (await sdk.completions.create(model=MODEL, prompt="x")).choices
        assert not fake_anthropic.requests  # the higher-priority Anthropic channel was skipped
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.completions.create(model="claude-sonnet-4-5", prompt="x")
        assert refused.value.code == "endpoint_not_supported" and "completions" in refused.value.message
        filled = await sdk.completions.create(model="deepseek-chat", prompt="def f(", suffix="return 1", max_tokens=30)
        assert filled.choices[0].text == (COMPLETION_PREFIX + "def f(" + " … return 1")[:120]
        assert filled.usage is not None
        assert [r["path"] for r in deepseek.requests] == ["/beta/completions"]
        assert deepseek.requests[0]["json"] == {"model": "deepseek-chat", "prompt": "def f(", "suffix": "return 1",
                                                "max_tokens": 30}
        assert not deepseek.violations
    (*_, row) = await gateway.consume_logs()
    assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (
        "deepseek-chat", filled.usage.prompt_tokens, filled.usage.completion_tokens)
