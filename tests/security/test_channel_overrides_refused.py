"""A channel's parameter override, header override and settings are checked before they are
stored: each bad one is a 400 naming the field, on create and on update, and nothing is stored
(issue 15). The tests share one gateway: each channel a test adds is its own."""

from __future__ import annotations

from typing import Any

import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

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
async def test_bad_overrides_and_settings_are_refused(module_admin: AdminClient, change: dict[str, Any],
                                                      message: str) -> None:
    admin = module_admin
    channels = await m.Channel.all().count()
    headers = {"New-Api-User": str(admin.user_id)}
    resp = await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**GOOD, **change}},
                                 headers=headers)
    assert resp.status_code == 400 and message in resp.json()["message"], resp.json()
    assert await m.Channel.all().count() == channels
    channel_id = await admin.add_channel(base_url=GOOD["base_url"], models="gpt-4o")
    resp = await admin.http.put("/api/channel/", json={"id": channel_id, **change}, headers=headers)
    assert resp.status_code == 400 and message in resp.json()["message"]
    row = await m.Channel.get(id=channel_id)
    assert (row.param_override, row.header_override, row.setting) == ("", "", "")
