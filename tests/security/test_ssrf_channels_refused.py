"""A channel's base URL never reaches a cloud metadata, link-local or multicast address, in
any spelling: refused on create, on update and when the models of a channel not saved yet are
fetched. The tests share one gateway: each channel a test adds is its own."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

CHANNEL = {"type": 1, "key": "sk-upstream", "name": "ch", "models": "gpt-4o", "group": "default"}
ALWAYS_REFUSED = [
    ("http://169.254.169.254/v1", "cloud metadata"),
    ("http://2852039166/v1", "cloud metadata"),
    ("http://[::ffff:169.254.169.254]/v1", "cloud metadata"),
    ("http://[fd00:ec2::254]/v1", "cloud metadata"),
    ("http://metadata.google.internal/v1", "cloud metadata"),
    ("http://METADATA.google.internal./v1", "cloud metadata"),
    ("http://100.100.100.200/v1", "cloud metadata"),
    ("http://[fe80::1]/v1", "link-local"),
    ("http://169.254.10.10:8000/v1", "link-local"),
    ("http://224.0.0.1/v1", "multicast"),
]


async def _post_channel(admin: AdminClient, base_url: str) -> Any:
    return await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**CHANNEL, "base_url": base_url}},
                                 headers={"New-Api-User": str(admin.user_id)})


@pytest.mark.parametrize(("base_url", "category"), ALWAYS_REFUSED, ids=[u for u, _ in ALWAYS_REFUSED])
async def test_channel_base_urls_never_reach_metadata_or_link_local(module_admin: AdminClient, base_url: str,
                                                                    category: str) -> None:
    admin = module_admin
    channels = await m.Channel.all().count()
    resp = await _post_channel(admin, base_url)
    assert resp.status_code == 400 and resp.json()["success"] is False
    assert category in resp.json()["message"] and resp.json()["message"].startswith("base_url: ")
    assert await m.Channel.all().count() == channels
    channel_id = await admin.add_channel(base_url="http://127.0.0.1:9/v1", models="gpt-4o")
    resp = await admin.http.put("/api/channel/", json={"id": channel_id, "base_url": base_url},
                                headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and category in resp.json()["message"]
    assert (await m.Channel.get(id=channel_id)).base_url == "http://127.0.0.1:9/v1"
    # the models of a channel not saved yet: the same rules before the upstream is asked
    resp = await admin.http.post("/api/channel/fetch_models", json={"type": 1, "key": "sk-x", "base_url": base_url},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and category in resp.json()["message"]
