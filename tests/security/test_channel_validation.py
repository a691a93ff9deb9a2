"""Channels are validated before they are stored (issue 8, #5): an unknown type (named
with the installed ones), a base URL that is not http(s) or carries credentials, header
overrides that set Host or hop-by-hop headers or smuggle CR/LF are 400s, never stored,
never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

GOOD = {"type": 1, "key": "sk-upstream", "name": "ch", "base_url": "https://api.example.com", "models": "gpt-4o",
        "group": "default"}

BAD: list[tuple[dict[str, Any], str]] = [
    ({"type": 999}, "installed types: "),
    ({"base_url": "file:///etc/passwd"}, "http:// or https://"),
    ({"base_url": "gopher://127.0.0.1:6379/_INFO"}, "http:// or https://"),
    ({"base_url": "ftp://example.com"}, "http:// or https://"),
    ({"base_url": "https://user:secret@example.com"}, "user:password@"),
    ({"base_url": "https://example.com:99999"}, "not a valid URL"),
    ({"base_url": "https://exa mple.com"}, "spaces"),
    ({"base_url": "https:///nohost"}, "no host"),
    ({"base_url": "https://example.com/?a=1"}, "query string"),
    ({"header_override": '{"Host": "evil.example"}'}, "cannot be overridden"),
    ({"header_override": '{"Transfer-Encoding": "chunked"}'}, "cannot be overridden"),
    ({"header_override": '{"Connection": "close"}'}, "cannot be overridden"),
    ({"header_override": '{"X-Evil": "a\\r\\nHost: evil"}'}, "CR, LF"),
    ({"header_override": '{"Bad Name": "x"}'}, "valid header name"),
    ({"header_override": '{"X-Num": 5}'}, "must be a string"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[str(c) for c, _ in BAD])
async def test_bad_channels_are_refused_on_create_and_update(admin: AdminClient, change: dict[str, Any],
                                                             message: str) -> None:
    resp = await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**GOOD, **change}},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and resp.json()["success"] is False
    assert message in resp.json()["message"]
    assert await m.Channel.all().count() == 0
    channel_id = await admin.add_channel(base_url=GOOD["base_url"], models="gpt-4o")
    resp = await admin.http.put("/api/channel/", json={"id": channel_id, **change},
                                headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and message in resp.json()["message"]
    row = await m.Channel.get(id=channel_id)
    assert (row.type, row.base_url) == (1, GOOD["base_url"]) and not row.header_override


async def test_good_channels_still_pass(admin: AdminClient) -> None:
    await admin.add_channel(base_url="http://127.0.0.1:8000/v1", models="m", header_override='{"X-Org": "acme"}')
    await admin.add_channel(base_url="", models="m")
