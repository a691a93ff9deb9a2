"""The provider's say on its keys (``Provider.check_key``), general to every channel type: a
key of the wrong shape is a 400 naming the field when a channel is added (each key of a
batch or multi-key add), updated (its key, or the type, ``other`` or settings it is read
with) or imported, and nothing is stored; the check reads new-api's ``settings`` beside the
channel's ``setting``; a provider whose check breaks refuses rather than answering 500.
Also: JSON keys (service-account files, pasted over many lines) are kept one a line, and the
parts of a composite key (``AK|SK|region``) are redacted as the key is."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from faregate.api import (
    ChatRequest,
    ChatResponse,
    GatewayError,
    Provider,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    hookimpl,
)
from faregate.plugins import load_plugins
from faregate.security.redact import redact
from faregate.state.snapshot import key_lines
from faregate.testing.harness import AdminClient

TYPE = 9300


class PickyProvider(Provider):
    """Keys are ``ok-…``, and need ``other`` set when the setting ``needs_other`` says so."""

    name = "picky"
    channel_types = (TYPE,)

    def check_key(self, key: str, other: str, settings: Mapping[str, Any]) -> str | None:
        if key == "boom":
            raise RuntimeError("a bug in the plugin")
        if not key.startswith("ok-"):
            return "must start with ok-"
        if settings.get("needs_other") and not other:
            return "needs other"
        return None

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        raise GatewayError(500, "not called")

    def parse_response(self, body: bytes) -> ChatResponse:
        raise GatewayError(500, "not called")

    def stream_parser(self) -> StreamParser:
        raise NotImplementedError

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return GatewayError(status, "upstream")


class PickyPlugin:
    @hookimpl
    def register_providers(self, register: Callable[[Provider], None]) -> None:
        register(PickyProvider())


def _channel(**fields: Any) -> dict[str, Any]:
    return {"type": TYPE, "name": "picky", "base_url": "http://127.0.0.1:9", "models": "m", "group": "default",
            **fields}


@pytest.fixture
async def admin(make_gateway: Any) -> Any:
    server = await make_gateway(plugins=load_plugins(extra=[PickyPlugin()]))
    client = AdminClient(server.base_url)
    await client.setup_root()
    yield client
    await client.close()


async def _count(admin: AdminClient) -> int:
    return int((await admin.ok("GET", "/api/channel/"))["total"])


async def test_a_bad_key_is_refused_on_add_and_nothing_is_stored(admin: AdminClient) -> None:
    refused = await admin.call("POST", "/api/channel/", json={"mode": "single", "channel": _channel(key="nope-123")})
    assert refused["success"] is False and refused["message"] == "key: must start with ok-"
    for mode in ("batch", "multi_to_single"):
        refused = await admin.call("POST", "/api/channel/", json={"mode": mode, "channel": _channel(
            key="ok-1\nbad-2\nok-3")})
        assert refused["message"] == "key (key 2 of 3): must start with ok-", mode
    # new-api's "settings" are read with the channel's own "setting"
    refused = await admin.call("POST", "/api/channel/", json={"mode": "single", "channel": _channel(
        key="ok-1", settings='{"needs_other": true}')})
    assert refused["message"] == "key: needs other"
    broken = await admin.call("POST", "/api/channel/", json={"mode": "single", "channel": _channel(key="boom")})
    assert broken["success"] is False and broken["message"] == "key: it could not be checked (RuntimeError)"
    assert await _count(admin) == 0


async def test_updates_are_checked_as_the_channel_will_be(admin: AdminClient) -> None:
    made = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": _channel(
        key="ok-1", other="x", setting='{"needs_other": true}')})
    assert (await admin.call("PUT", "/api/channel/", json={"id": made, "key": "bad"}))["message"] == \
        "key: must start with ok-"
    assert (await admin.call("PUT", "/api/channel/", json={"id": made, "other": ""}))["message"] == \
        "key: needs other"
    assert (await admin.call("PUT", "/api/channel/", json={"id": made, "name": "renamed"}))["success"] is True
    assert (await admin.call("PUT", "/api/channel/", json={"id": made, "key": "ok-2"}))["success"] is True
    row = await admin.ok("GET", f"/api/channel/{made}")
    assert row["other"] == "x" and row["name"] == "renamed"


async def test_new_apis_other_settings_are_kept_beside_setting(make_gateway: Any) -> None:
    """new-api's second settings column (``vertex_key_type`` …) is stored as sent, beside
    ``setting``, and each comes back as it was stored (issue 28, item 7: new-api's channel
    editor reads them apart, and reset what it did not find on save); a provider reads both
    as one object, these keys winning (``UpstreamTarget.settings``), on add and on update."""
    server = await make_gateway(plugins=load_plugins(extra=[PickyPlugin()]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    made = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": _channel(
        key="ok-1", other="x", setting='{"proxy": "", "kind": "z"}', settings='{"needs_other": true, "kind": "a"}')})
    view = await admin.ok("GET", f"/api/channel/{made}")
    assert (json.loads(view["setting"]), json.loads(view["settings"])) == (
        {"proxy": "", "kind": "z"}, {"needs_other": True, "kind": "a"})
    assert server.gateway.snapshot.channels[made].setting == {"proxy": "", "needs_other": True, "kind": "a"}
    assert (await admin.call("PUT", "/api/channel/", json={"id": made, "settings": '{"kind": "b"}'}))["success"]
    assert json.loads((await admin.ok("GET", f"/api/channel/{made}"))["settings"]) == {"kind": "b"}
    assert server.gateway.snapshot.channels[made].setting == {"proxy": "", "kind": "b"}
    refused = await admin.http.put("/api/channel/", json={"id": made, "settings": "[1]"},
                                   headers={"New-Api-User": str(admin.user_id)})
    assert refused.status_code == 400 and "settings" in refused.json()["message"]
    # a setting the relay checks is checked in either column: a proxy in settings too
    proxy = await admin.call("PUT", "/api/channel/", json={"id": made, "settings": '{"proxy": "ftp://x"}'})
    assert proxy["success"] is False and "proxy" in proxy["message"]
    await admin.close()


def test_json_keys_are_one_a_line() -> None:
    pasted = '{\n  "type": "service_account",\n  "private_key": "-----BEGIN PRIVATE KEY-----\\nAB\\n"\n}'
    assert key_lines(pasted) == ['{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\\nAB\\n"}']
    assert key_lines('[{"a": 1},\n {"b": 2}]') == ['{"a":1}', '{"b":2}']
    assert key_lines("sk-1\n\n sk-2 \n") == ["sk-1", "sk-2"]
    assert key_lines("{not json\nsk-2") == ["{not json", "sk-2"]  # not JSON: lines, as ever


def test_the_parts_of_a_composite_key_are_redacted() -> None:
    key = "AKIAIOSFODNN7EXAMPLE|wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY|us-east-1"
    text = redact("denied for AKIAIOSFODNN7EXAMPLE (secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY)", [key])
    assert "AKIAIOSFODNN7EXAMPLE" not in text and "wJalrXUtnFEMI" not in text and text.startswith("denied for")
