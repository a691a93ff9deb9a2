"""What a channel or a request puts into an upstream URL cannot reach another path or add a
query (issue 15): Azure's deployment (the upstream model name: the caller's, or the
channel's mapping of it), a Custom channel's ``{model}``, Cloudflare's account id and
Azure's api-version (the channel's ``other``). Unescaped, a model named
``x/../../other?api-version=…`` would call another resource path with the channel's key;
escaped, a name of dots alone would still climb (URL normalisation resolves ``%2E%2E``), so
it is refused; a malformed ``other`` makes the channel uncallable (the next one is tried),
never part of the URL."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from yarl import URL

from faregate.api import GatewayError, UpstreamTarget
from faregate_adapter_openai.azure import AzureOpenAIProvider
from faregate_adapter_openai.provider import OpenAIProvider

AZURE = AzureOpenAIProvider()
OPENAI = OpenAIProvider()
RESOURCE = "https://res.openai.azure.com"


def target(channel_type: int, base_url: str, model: str = "m", other: str = "") -> UpstreamTarget:
    return UpstreamTarget(base_url=base_url, key="k", model=model, stream=False, channel_type=channel_type,
                          other=other)


@pytest.mark.parametrize("model", ["x/../../../openai/other", "dep?api-version=1&x=", "dep#frag", "a b", "..x/.."])
def test_a_model_is_one_path_segment_of_the_deployment_url(model: str) -> None:
    for kind, task in (("chat", ["chat", "completions"]), ("embeddings", ["embeddings"]),
                       ("audio_speech", ["audio", "speech"])):
        url = URL(AZURE.endpoint_url(target(3, RESOURCE, model), kind), encoded=True)
        assert url.raw_path.split("/") == ["", "openai", "deployments", quote(model, safe=""), *task]
        assert URL(str(url)).path.startswith("/openai/deployments/")  # as the client sends it, normalised
        assert dict(url.query) == {"api-version": "2025-04-01-preview"}
    realtime = URL(AZURE.build_realtime(target(3, RESOURCE, model), beta=False).url, encoded=True)
    assert realtime.raw_path == "/openai/v1/realtime" and dict(realtime.query) == {"model": model}
    preview = URL(AZURE.build_realtime(target(3, RESOURCE, model), beta=True).url, encoded=True)
    assert preview.raw_path == "/openai/realtime" and preview.query["deployment"] == model
    assert set(preview.query) == {"api-version", "deployment"}
    custom = URL(OPENAI.endpoint_url(target(8, "https://h/{model}/v1/chat/completions", model), "chat"), encoded=True)
    assert custom.raw_path.count("/") == 4 and not custom.query


@pytest.mark.parametrize("model", ["..", ".", "...", ""])
def test_a_name_of_dots_is_refused(model: str) -> None:
    for build in (lambda: AZURE.endpoint_url(target(3, RESOURCE, model), "chat"),
                  lambda: OPENAI.endpoint_url(target(8, "https://h/{model}/v1/chat/completions", model), "chat")):
        with pytest.raises(GatewayError) as refused:
            build()
        assert refused.value.status == 400 and refused.value.param == "model"


@pytest.mark.parametrize("other", ["2024-10-21&api-key=stolen", "2024-10-21/../x", "2024-10-21#", "latest?x"])
def test_azure_s_api_version_cannot_carry_a_query(other: str) -> None:
    with pytest.raises(GatewayError) as refused:
        AZURE.endpoint_url(target(3, RESOURCE, other=other), "chat")
    assert refused.value.code == "channel:invalid_other"
    assert AZURE.check_key("key", other, {}) is not None  # refused when the channel is saved, too


@pytest.mark.parametrize("other", ["acc/../../zones", "acc?x=1", "acc#", "ac c", "."])
def test_cloudflare_s_account_id_cannot_reach_another_path(other: str) -> None:
    with pytest.raises(GatewayError) as refused:
        OPENAI.endpoint_url(target(39, "", other=other), "chat")
    assert refused.value.code == "channel:invalid_other"
