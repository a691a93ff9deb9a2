"""A channel's parameter override, header override and settings are checked before they
are stored (a 400 naming the field, never stored), and cannot be turned against callers or
the gateway: the caller's own credentials (Authorization, X-Api-Key, cookies) never reach
an upstream through a pass-through or a copy, a regex that could take exponential time on a
caller's text is refused, a proxy at a cloud metadata address is refused, and a proxy's
password is masked wherever a channel is listed (issue 15). The bad overrides and settings
refused by name are in test_channel_overrides_refused.py (on one gateway for the module)."""

from __future__ import annotations

import httpx

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

GOOD = {"type": 1, "key": "sk-upstream", "name": "ch", "base_url": "https://api.example.com", "models": "gpt-4o",
        "group": "default"}


PROXY = "http://alice:s3cret-pw@127.0.0.1:3128"


async def test_a_proxy_password_is_masked_in_listings_and_kept_on_echo(admin: AdminClient) -> None:
    cid = await admin.add_channel(base_url=GOOD["base_url"], models="gpt-4o",
                                  setting=jsonutil.dumps_str({"proxy": PROXY, "force_convert": False}))
    listed = (await admin.ok("GET", "/api/channel/"))["items"][0]
    shown = await admin.ok("GET", f"/api/channel/{cid}")
    for view in (listed, shown):
        assert "s3cret-pw" not in jsonutil.dumps_str(view)
        assert jsonutil.loads(view["setting"])["proxy"] == "http://alice:***@127.0.0.1:3128"
    # the console sends back the channel it loaded: the masked proxy keeps the stored one
    await admin.ok("PUT", "/api/channel/", json={**shown, "name": "renamed"})
    row = await m.Channel.get(id=cid)
    assert row.name == "renamed" and jsonutil.loads(row.setting)["proxy"] == PROXY
    # a masked password that is not the stored one's is refused, not stored as "***"
    other = jsonutil.dumps_str({"proxy": "http://bob:***@127.0.0.1:3128"})
    resp = await admin.call("PUT", "/api/channel/", json={"id": cid, "setting": other})
    assert resp["success"] is False and "masked" in resp["message"]
    assert jsonutil.loads((await m.Channel.get(id=cid)).setting)["proxy"] == PROXY


async def test_pass_through_never_sends_the_callers_credentials(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI() as fake:
        await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key="sk-channel-key",
                                header_override=jsonutil.dumps_str({"*": "", "X-Org": "{client_header:X-Team}"}))
        caller = await admin.add_token()
        async with httpx.AsyncClient(base_url=gateway.base_url) as http:
            resp = await http.post("/v1/chat/completions", json={
                "model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}, headers={
                "Authorization": f"Bearer {caller}", "X-Api-Key": caller, "Cookie": "session=abc",
                "X-Trace": "t-1", "X-Team": "blue"})
        assert resp.status_code == 200
        seen = fake.requests[-1]["headers"]
        assert seen["authorization"] == "Bearer sk-channel-key"
        assert "x-api-key" not in seen and "cookie" not in seen
        assert seen["x-trace"] == "t-1" and seen["x-org"] == "blue"
        assert caller not in jsonutil.dumps_str(seen)
