"""The channel's management calls on a Bedrock channel: the channel test (through the
provider's own chat: InvokeModel for Claude, Converse for the others), the model list
(ListFoundationModels, on the control plane's host, or the base URL's), and the balance
AWS does not report."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.api import UpstreamTarget
from faregate_adapter_bedrock.provider import BedrockProvider
from faregate_adapter_bedrock.testing import API_KEY

from .conftest import CLAUDE, CLAUDE_ID, NOVA


async def test_channel_test_models_and_balance(deployed: Any) -> None:
    admin, channel = deployed.admin, deployed.channel
    for model in (CLAUDE, NOVA):
        result = await admin.call("GET", f"/api/channel/test/{channel}?model={model}")
        assert result["success"] is True, result
    assert [r["path"] for r in deployed.fake.requests] == [f"/model/{CLAUDE_ID}/invoke", f"/model/{NOVA}/converse"]
    models = await admin.ok("GET", f"/api/channel/fetch_models/{channel}")
    assert NOVA in models and deployed.fake.requests[-1]["path"] == "/foundation-models"
    balance = await admin.call("GET", f"/api/channel/update_balance/{channel}")
    assert balance["success"] is False and "does not report a balance" in balance["message"]


@pytest.mark.parametrize(("base_url", "expected"), [
    ("", "https://bedrock.eu-west-1.amazonaws.com/foundation-models?byOutputModality=TEXT"),
    ("https://proxy.example/aws", "https://proxy.example/aws/foundation-models?byOutputModality=TEXT"),
])
def test_the_model_list_is_on_the_control_plane(base_url: str, expected: str) -> None:
    request = BedrockProvider().models_request(UpstreamTarget(base_url=base_url, key=f"{API_KEY}|eu-west-1",
                                                              model="", stream=False, channel_type=33))
    assert request is not None and request.url == expected and request.method == "GET"
    assert request.headers["Authorization"] == f"Bearer {API_KEY}"


def test_calls_go_to_the_regions_runtime_unless_a_base_url_replaces_it() -> None:
    from faregate.api import ChatRequest, Message, TextPart

    provider = BedrockProvider()
    chat = ChatRequest(model=NOVA, messages=[Message("user", [TextPart("hi")])])
    target = UpstreamTarget(base_url="", key=f"{API_KEY}|ap-southeast-2", model=CLAUDE, stream=True, channel_type=33)
    url = provider.build_request(chat, target).url
    assert url == ("https://bedrock-runtime.ap-southeast-2.amazonaws.com/model/"
                   "apac.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream")
    target.base_url, target.model = "https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com", NOVA
    assert provider.build_request(chat, target).url.startswith(target.base_url + "/model/amazon.nova-pro-v1:0/")
