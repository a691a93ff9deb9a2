"""A channel's parameter override, header override and settings are checked before they
are stored (a 400 naming the field, never stored), and cannot be turned against callers or
the gateway: the caller's own credentials (Authorization, X-Api-Key, cookies) never reach
an upstream through a pass-through or a copy, a regex that could take exponential time on a
caller's text is refused, a proxy at a cloud metadata address is refused, and a proxy's
password is masked wherever a channel is listed (issue 15)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

GOOD = {"type": 1, "key": "sk-upstream", "name": "ch", "base_url": "https://api.example.com", "models": "gpt-4o",
        "group": "default"}


def ops(*operations: dict[str, Any]) -> str:
    return jsonutil.dumps_str({"operations": list(operations)})


BAD: list[tuple[dict[str, Any], str]] = [
    ({"param_override": ops({"mode": "explode", "path": "x"})}, "param_override: operation 1: mode must be"),
    ({"param_override": ops({"mode": "set"})}, "path is required"),
    ({"param_override": ops({"mode": "set", "path": "a..b", "value": 1})}, "empty segment"),
    ({"param_override": ops({"mode": "set", "path": "x" * 300, "value": 1})}, "longer than 256"),
    ({"param_override": ops(*[{"mode": "delete", "path": "x"}] * 101)}, "more than 100 operations"),
    ({"param_override": ops({"mode": "regex_replace", "path": "m", "from": "(a+)+$", "to": ""})}, "exponential"),
    ({"param_override": ops({"mode": "regex_replace", "path": "m", "from": "(a|aa)*b", "to": ""})}, "exponential"),
    ({"param_override": ops({"mode": "regex_replace", "path": "m", "from": "(a)\\1", "to": ""})}, "back-references"),
    ({"param_override": ops({"mode": "regex_replace", "path": "m", "from": "[", "to": ""})}, "not a valid regex"),
    ({"param_override": ops({"mode": "return_error", "value": {"message": "no", "status_code": 700}})},
     "status_code must be"),
    ({"param_override": ops({"mode": "set", "path": "x", "value": 1,
                             "conditions": [{"path": "n", "mode": "gt", "value": "five"}]})}, "compares with a number"),
    ({"param_override": ops({"mode": "copy_header", "from": "Authorization", "to": "X-Caller"})},
     "never sent upstream"),
    ({"param_override": ops({"mode": "pass_headers", "value": ["X-Trace", "Cookie"]})}, "never sent upstream"),
    ({"param_override": ops({"mode": "set_header", "path": "Host", "value": "evil"})}, "cannot be changed"),
    ({"param_override": ops({"mode": "set_header", "path": "X-A", "value": "a\r\nHost: evil"})}, "CR, LF"),
    ({"param_override": ops({"mode": "sync_fields", "from": "header:Authorization", "to": "json:metadata.key"})},
     "never sent upstream"),  # the caller's gateway key copied into the upstream body
    ({"param_override": ops({"mode": "sync_fields", "from": "json:user", "to": "header:Content-Length"})},
     "cannot be changed"),
    ({"param_override": ops({"mode": "set_header", "path": "X-A", "value": "{client_header:Cookie}"})},
     "never sent upstream"),
    ({"param_override": '{"operations": "all"}'}, "operations must be an array"),
    ({"header_override": '{"X-Caller": "{client_header:Authorization}"}'}, "never sent upstream"),
    ({"header_override": '{"X-Caller": "Bearer {client_header:X-Api-Key}"}'}, "whole value"),
    ({"header_override": '{"re:(x+)+y": ""}'}, "exponential"),
    ({"setting": '{"proxy": "ftp://proxy.example:21"}'}, "setting.proxy must be a"),
    ({"setting": '{"proxy": "http://proxy.example:3128/path"}'}, "path, query string or fragment"),
    ({"setting": '{"proxy": "socks5://169.254.169.254:1080"}'}, "setting.proxy"),
    ({"setting": '{"proxy": 8080}'}, "setting.proxy must be a URL string"),
    ({"setting": '{"system_prompt": 5}'}, "setting.system_prompt"),
    ({"setting": '{"system_prompt_override": "yes"}'}, "setting.system_prompt_override"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[str(i) for i in range(len(BAD))])
async def test_bad_overrides_and_settings_are_refused(admin: AdminClient, change: dict[str, Any],
                                                      message: str) -> None:
    headers = {"New-Api-User": str(admin.user_id)}
    resp = await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**GOOD, **change}},
                                 headers=headers)
    assert resp.status_code == 400 and message in resp.json()["message"], resp.json()
    assert await m.Channel.all().count() == 0
    channel_id = await admin.add_channel(base_url=GOOD["base_url"], models="gpt-4o")
    resp = await admin.http.put("/api/channel/", json={"id": channel_id, **change}, headers=headers)
    assert resp.status_code == 400 and message in resp.json()["message"]
    row = await m.Channel.get(id=channel_id)
    assert (row.param_override, row.header_override, row.setting) == ("", "", "")


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
