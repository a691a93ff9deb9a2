"""The channel's management calls on a Vertex channel: the channel test (through the
provider's own chat, both publishers, the token exchange included), the upstream's model
list (a service account's: Google's publisher models), and the balance Vertex does not
report."""

from __future__ import annotations

from typing import Any

from .conftest import CLAUDE, GEMINI


async def test_channel_test_models_and_balance(deployed: Any) -> None:
    admin, channel = deployed.admin, deployed.channel
    for model in (GEMINI, CLAUDE):
        result = await admin.call("GET", f"/api/channel/test/{channel}?model={model}")
        assert result["success"] is True, result
    assert [r["path"].rsplit(":", 1)[1] for r in deployed.fake.requests] == ["generateContent", "rawPredict"]
    models = await admin.ok("GET", f"/api/channel/fetch_models/{channel}")
    assert GEMINI in models
    listed = deployed.fake.requests[-1]
    assert listed["path"] == "/v1beta1/publishers/google/models" and listed["headers"]["authorization"]
    balance = await admin.call("GET", f"/api/channel/update_balance/{channel}")
    assert balance["success"] is False and "does not report a balance" in balance["message"]
    assert deployed.oauth.token_requests == 1


async def test_an_express_channel_lists_no_models(express: Any) -> None:
    result = await express.admin.call("GET", f"/api/channel/fetch_models/{express.channel}")
    assert result["success"] is False and "cannot list its models" in result["message"]
    tested = await express.admin.call("GET", f"/api/channel/test/{express.channel}?model={GEMINI}")
    assert tested["success"] is True
