"""The OpenAI-compatible presets and the Azure provider as pure functions: where each vendor's
requests go (the URLs its documentation gives), which endpoint kinds it serves, how its key
is sent, what its bodies lose or rename. The relay through them is tests/test_relay_presets.py
and tests/test_relay_azure.py."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.api import ChatRequest, GatewayError, Message, TextPart, UpstreamTarget, json_loads
from faregate_adapter_openai.azure import AzureOpenAIProvider
from faregate_adapter_openai.presets import FAREGATE_TYPES, PRESETS
from faregate_adapter_openai.provider import OpenAIProvider

OPENAI = OpenAIProvider()
AZURE = AzureOpenAIProvider()


def target(channel_type: int, base_url: str = "", *, other: str = "", model: str = "m", stream: bool = False,
           key: str = "sk-k", settings: dict[str, Any] | None = None) -> UpstreamTarget:
    return UpstreamTarget(base_url=base_url, key=key, model=model, stream=stream, channel_type=channel_type,
                          other=other, settings=settings or {})


# ---- the table ---------------------------------------------------------------------------
def test_every_row_has_a_type_of_new_api_or_faregate_s_own_range() -> None:
    for channel_type, row in PRESETS.items():
        assert row.channel_type == channel_type
        assert 1 <= channel_type < 100 or channel_type in FAREGATE_TYPES, row.name
    assert len({row.name for row in PRESETS.values()}) == len(PRESETS)
    assert OPENAI.channel_types == tuple(PRESETS)
    # the list, by new-api's numbers (and Faregate's for Groq, Together, Fireworks)
    wanted = {1: "openai", 4: "ollama", 8: "custom", 17: "dashscope", 20: "openrouter", 25: "moonshot",
              26: "zhipu-v4", 27: "perplexity", 31: "lingyiwanwu", 35: "minimax", 39: "cloudflare",
              40: "siliconflow", 42: "mistral", 43: "deepseek", 45: "volcengine", 46: "baidu-v2", 47: "xinference",
              48: "xai", 1001: "groq", 1002: "together", 1003: "fireworks", 1004: "vllm"}
    assert {t: PRESETS[t].name for t in wanted} == wanted


@pytest.mark.parametrize(("channel_type", "kind", "url"), [
    (1, "chat", "https://api.openai.com/v1/chat/completions"),
    (4, "chat", "http://localhost:11434/v1/chat/completions"),
    (17, "chat", "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions"),
    (17, "embeddings", "https://dashscope.aliyuncs.com/compatible-mode/v1/embeddings"),
    (20, "chat", "https://openrouter.ai/api/v1/chat/completions"),
    (25, "chat", "https://api.moonshot.cn/v1/chat/completions"),
    (26, "chat", "https://open.bigmodel.cn/api/paas/v4/chat/completions"),
    (26, "embeddings", "https://open.bigmodel.cn/api/paas/v4/embeddings"),
    (27, "chat", "https://api.perplexity.ai/chat/completions"),
    (27, "responses", "https://api.perplexity.ai/v1/responses"),
    (31, "chat", "https://api.lingyiwanwu.com/v1/chat/completions"),
    (35, "chat", "https://api.minimax.chat/v1/text/chatcompletion_v2"),
    (40, "rerank", "https://api.siliconflow.cn/v1/rerank"),
    (42, "chat", "https://api.mistral.ai/v1/chat/completions"),
    (43, "completions", "https://api.deepseek.com/beta/completions"),
    (43, "models", "https://api.deepseek.com/v1/models"),
    (45, "chat", "https://ark.cn-beijing.volces.com/api/v3/chat/completions"),
    (45, "responses", "https://ark.cn-beijing.volces.com/api/v3/responses"),
    (46, "chat", "https://qianfan.baidubce.com/v2/chat/completions"),
    (48, "images", "https://api.x.ai/v1/images/generations"),
    (1001, "chat", "https://api.groq.com/openai/v1/chat/completions"),
    (1001, "models", "https://api.groq.com/openai/v1/models"),
    (1001, "audio_transcriptions", "https://api.groq.com/openai/v1/audio/transcriptions"),
    (1002, "chat", "https://api.together.xyz/v1/chat/completions"),
    (1003, "chat", "https://api.fireworks.ai/inference/v1/chat/completions"),
    (1004, "chat", "http://localhost:8000/v1/chat/completions"),  # vLLM as `vllm serve` starts it
    (1004, "rerank", "http://localhost:8000/v1/rerank"),
    (1004, "models", "http://localhost:8000/v1/models"),
])
def test_the_documented_urls(channel_type: int, kind: str, url: str) -> None:
    assert OPENAI.endpoint_url(target(channel_type), kind) == url


def test_a_base_url_overrides_the_default_and_keeps_the_vendor_s_root() -> None:
    proxy = "https://proxy.example/zhipu"
    assert OPENAI.endpoint_url(target(26, proxy), "chat") == f"{proxy}/api/paas/v4/chat/completions"
    # an admin who typed the root (or /v1) into the base URL does not get it twice
    assert OPENAI.endpoint_url(target(26, proxy + "/api/paas/v4/"), "chat") == f"{proxy}/api/paas/v4/chat/completions"
    assert OPENAI.endpoint_url(target(43, "https://api.deepseek.com/v1"), "chat") == \
        "https://api.deepseek.com/v1/chat/completions"
    assert OPENAI.endpoint_url(target(1001, "https://api.groq.com/openai"), "chat") == \
        "https://api.groq.com/openai/v1/chat/completions"


def test_cloudflare_takes_the_account_from_other() -> None:
    url = OPENAI.endpoint_url(target(39, other=" 0123abcd "), "chat")
    assert url == "https://api.cloudflare.com/client/v4/accounts/0123abcd/ai/v1/chat/completions"
    for bad in ("", "a/b", "a?b", "..", "x" * 65):
        with pytest.raises(GatewayError) as refused:
            OPENAI.endpoint_url(target(39, other=bad), "chat")
        assert refused.value.code == "channel:invalid_other"  # the next channel is tried


@pytest.mark.parametrize("channel_type", [8, 47])
def test_a_type_without_a_default_needs_the_channel_s_base_url(channel_type: int) -> None:
    with pytest.raises(GatewayError) as refused:
        OPENAI.endpoint_url(target(channel_type), "chat")
    assert refused.value.code == "channel:invalid_base_url"
    assert OPENAI.endpoint_url(target(channel_type, "http://10.0.0.5:8000"), "chat") == \
        "http://10.0.0.5:8000/v1/chat/completions"


def test_custom_takes_new_api_s_whole_chat_url() -> None:
    base = "https://llm.example/serve/{model}/v1/chat/completions"
    t = target(8, base, model="qwen/qwen3:8b")
    assert OPENAI.endpoint_url(t, "chat") == "https://llm.example/serve/qwen%2Fqwen3%3A8b/v1/chat/completions"
    assert OPENAI.endpoint_url(t, "embeddings") == "https://llm.example/serve/qwen%2Fqwen3%3A8b/v1/embeddings"
    assert OPENAI.endpoint_url(target(8, "https://llm.example/v1"), "chat") == \
        "https://llm.example/v1/chat/completions"


def test_what_each_vendor_serves() -> None:
    """The capabilities of the former per-type table are kept, and the new rows narrow too."""
    everything = ("chat", "embeddings", "images", "audio_speech", "responses", "realtime", "moderations")
    for channel_type in (1, 8):
        assert all(OPENAI.serves(kind, channel_type) for kind in everything)
    assert [k for k in everything if OPENAI.serves(k, 25)] == ["chat"]
    assert [k for k in everything if OPENAI.serves(k, 31)] == ["chat"]
    assert [k for k in everything if OPENAI.serves(k, 40)] == ["chat", "embeddings", "audio_speech"]
    assert OPENAI.serves("rerank", 40) and not OPENAI.serves("images", 40)
    assert [k for k in everything if OPENAI.serves(k, 43)] == ["chat"] and OPENAI.serves("completions", 43)
    assert [k for k in everything if OPENAI.serves(k, 48)] == ["chat", "images", "responses"]
    assert [k for k in everything if OPENAI.serves(k, 1001)] == ["chat", "audio_speech", "responses"]
    assert not OPENAI.serves("realtime", 20) and not OPENAI.serves("embeddings", 27)
    assert [k for k in everything if OPENAI.serves(k, 1004)] == ["chat", "embeddings"]  # vLLM
    assert OPENAI.serves("rerank", 1004) and OPENAI.serves("completions", 1004)


def test_baidu_s_key_may_carry_an_app_id() -> None:
    assert OPENAI.auth_headers(target(46, key="bce-v3/KEY|app-42")) == {"appid": "app-42",
                                                                     "Authorization": "Bearer bce-v3/KEY"}
    assert OPENAI.auth_headers(target(46, key="bce-v3/KEY")) == {"Authorization": "Bearer bce-v3/KEY"}
    assert OPENAI.auth_headers(target(1, key="sk-a|b")) == {"Authorization": "Bearer sk-a|b"}  # no such rule


def test_model_lists() -> None:
    assert OPENAI.models_request(target(27)) is None  # Perplexity lists none
    assert OPENAI.models_request(target(39, other="acc")) is None
    req = OPENAI.models_request(target(1001, key="gsk_x"))
    assert req is not None and req.url == "https://api.groq.com/openai/v1/models"
    assert OPENAI.parse_models(b'{"object": "list", "data": [{"id": "a"}, {"id": "b"}]}') == ["a", "b"]
    assert OPENAI.parse_models(b'[{"id": "meta/llama", "type": "chat"}, {"oops": 1}]') == ["meta/llama"]  # Together
    for bad in (b"{", b'"x"', b'{"data": 3}'):
        with pytest.raises(GatewayError):
            OPENAI.parse_models(bad)


# ---- bodies ------------------------------------------------------------------------------
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi", "name": "ann"}], "seed": 7, "user": "u1",
        "max_completion_tokens": 30, "logprobs": True, "stream": True}


def test_a_body_a_vendor_takes_as_it_is_is_not_copied() -> None:
    assert PRESETS[1].adapt(BODY, stream=False) is None
    options = {**BODY, "stream_options": {"include_usage": True}}
    assert PRESETS[1].adapt(options, stream=True) is None


def test_mistral_gets_its_own_names_and_nothing_it_refuses() -> None:
    out = PRESETS[42].adapt({**BODY, "stream_options": {"include_usage": True}}, stream=True)
    assert out == {"model": "m", "messages": BODY["messages"], "random_seed": 7, "max_tokens": 30, "stream": True}
    assert "seed" in BODY and "stream_options" not in BODY  # the client's body is never changed in place


def test_groq_loses_what_it_refuses_and_asks_for_the_usage_chunk() -> None:
    out = PRESETS[1001].adapt(BODY, stream=True)
    assert out is not None
    assert out["messages"] == [{"role": "user", "content": "hi"}] and "logprobs" not in out
    assert out["stream_options"] == {"include_usage": True} and out["max_completion_tokens"] == 30


def test_a_vendor_that_knows_only_max_tokens_keeps_the_client_s_bound() -> None:
    out = PRESETS[43].adapt({"model": "m", "messages": [], "max_completion_tokens": 5}, stream=False)
    assert out == {"model": "m", "messages": [], "max_tokens": 5}
    both = {"model": "m", "messages": [], "max_completion_tokens": 5, "max_tokens": 9}
    assert PRESETS[43].adapt(both, stream=False) == {"model": "m", "messages": [], "max_tokens": 9}


def test_converted_requests_follow_the_row() -> None:
    request = ChatRequest(model="m", messages=[Message("user", [TextPart("hi")])], max_tokens=12, stream=True,
                          seed=3)
    mistral = json_loads(OPENAI.build_request(request, target(42, stream=True, model="mistral-small")).body or b"")
    assert mistral["max_tokens"] == 12 and mistral["random_seed"] == 3
    assert "stream_options" not in mistral and "max_completion_tokens" not in mistral and "seed" not in mistral
    openai = json_loads(OPENAI.build_request(request, target(1, stream=True)).body or b"")
    assert openai["max_completion_tokens"] == 12 and openai["stream_options"] == {"include_usage": True}


# ---- Azure -------------------------------------------------------------------------------
RESOURCE = "https://res.openai.azure.com"


@pytest.mark.parametrize(("kind", "path"), [
    ("chat", "/openai/deployments/gpt-4o/chat/completions"),
    ("completions", "/openai/deployments/gpt-4o/completions"),
    ("embeddings", "/openai/deployments/gpt-4o/embeddings"),
    ("images", "/openai/deployments/gpt-4o/images/generations"),
    ("image_edits", "/openai/deployments/gpt-4o/images/edits"),
    ("audio_transcriptions", "/openai/deployments/gpt-4o/audio/transcriptions"),
    ("audio_speech", "/openai/deployments/gpt-4o/audio/speech"),
])
def test_azure_deployment_urls(kind: str, path: str) -> None:
    assert AZURE.endpoint_url(target(3, RESOURCE, model="gpt-4o"), kind) == \
        f"{RESOURCE}{path}?api-version=2025-04-01-preview"
    assert AZURE.endpoint_url(target(3, RESOURCE + "/", model="gpt-4o", other="2024-10-21"), kind) == \
        f"{RESOURCE}{path}?api-version=2024-10-21"


def test_azure_responses_and_realtime() -> None:
    t = target(3, RESOURCE, model="gpt-4.1", other="2024-10-21")
    assert AZURE.endpoint_url(t, "responses") == f"{RESOURCE}/openai/v1/responses?api-version=preview"
    assert AZURE.endpoint_url(t, "responses_compact") == f"{RESOURCE}/openai/v1/responses/compact?api-version=preview"
    foundry = target(3, "https://res.cognitiveservices.azure.com", other="2025-03-01-preview")
    assert AZURE.endpoint_url(foundry, "responses") == \
        "https://res.cognitiveservices.azure.com/openai/responses?api-version=2025-03-01-preview"
    pinned = target(3, RESOURCE, settings={"azure_responses_version": "2025-05-01-preview"})
    assert AZURE.endpoint_url(pinned, "responses").endswith("?api-version=2025-05-01-preview")
    # realtime: a GA client at the v1 API's path (no api-version), a beta one at the preview path
    ws = AZURE.build_realtime(target(3, RESOURCE, model="gpt-realtime", key="az-key", other="2024-10-21"), beta=False)
    assert ws.url == "wss://res.openai.azure.com/openai/v1/realtime?model=gpt-realtime"
    assert ws.headers == {"api-key": "az-key"}
    beta = AZURE.build_realtime(target(3, RESOURCE, model="gpt-realtime", key="az-key"), beta=True)
    assert beta.url == \
        "wss://res.openai.azure.com/openai/realtime?api-version=2025-04-01-preview&deployment=gpt-realtime"
    assert beta.headers == {"api-key": "az-key", "OpenAI-Beta": "realtime=v1"}


def test_azure_s_key_header_and_capabilities() -> None:
    req = AZURE.build_request(ChatRequest(model="m", messages=[Message("user", [TextPart("hi")])]),
                              target(3, RESOURCE, key="az-key", model="dep"))
    assert req.headers["api-key"] == "az-key" and "Authorization" not in req.headers
    assert AZURE.serves("realtime", 3) and AZURE.serves("responses", 3)
    assert not AZURE.serves("moderations", 3) and not AZURE.serves("rerank", 3)
    assert AZURE.models_request(target(3, RESOURCE)) is None


def test_azure_refuses_a_channel_it_cannot_call() -> None:
    for bad in (target(3, ""), target(3, RESOURCE, other="2024-10-21&x=1"), target(3, RESOURCE, other="v?")):
        with pytest.raises(GatewayError) as refused:
            AZURE.endpoint_url(bad, "chat")
        assert (refused.value.code or "").startswith("channel:")
    assert AZURE.check_key("k", "2024-10-21", {}) is None
    assert AZURE.check_key("k", "", {"azure_responses_version": "preview"}) is None
    assert "api-version" in (AZURE.check_key("k", "yesterday", {}) or "")
    assert "azure_responses_version" in (AZURE.check_key("k", "", {"azure_responses_version": "?"}) or "")


async def test_a_balance_is_asked_of_the_row_s_default_when_the_channel_has_no_base_url() -> None:
    asked: list[str] = []

    async def fetch(req: Any) -> bytes:
        asked.append(req.url)
        return b'{"hard_limit_usd": 10, "has_payment_method": true}' if "subscription" in req.url \
            else b'{"total_usage": 250}'

    assert OPENAI.fetch_balance is not None
    assert await OPENAI.fetch_balance(target(1), fetch) == 7.5
    assert asked[0] == "https://api.openai.com/v1/dashboard/billing/subscription"
    with pytest.raises(GatewayError):  # Custom has no default
        await OPENAI.fetch_balance(target(8), fetch)
