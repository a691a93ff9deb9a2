"""Malformed input never gives a 500: every management route gets every field with
every wrong type, bad JSON, odd ids and odd query strings."""

from __future__ import annotations

from typing import Any

from faregate.testing.harness import AdminClient, GatewayServer

WEIRD: list[Any] = [None, "", "x", "5", -1, 0, 2**63, -(2**63) - 1, 1.5, True, False, [], {}, [1], {"a": 1},
                    "\x00", "é" * 300, "a" * 70_000]
RAW_BODIES = [b"", b"{", b"null", b"[]", b"[{}]", b"1", b'"s"', b"\xff\xfe", b'{"a": NaN}', b"{}" * 3,
              b'{"id": 99999999999999999999999}']


async def test_no_500_anywhere(gateway: GatewayServer, admin: AdminClient) -> None:
    cid = await admin.add_channel(base_url="http://127.0.0.1:9", models="m")
    tid = (await admin.ok("POST", "/api/token/", json={"name": "t"}))["id"]
    channel_base = {"type": 1, "key": "k", "name": "n", "models": "m", "group": "default"}
    bodies: list[tuple[str, str, dict[str, Any], list[str]]] = [
        ("POST", "/api/channel/", {"mode": "single", "channel": channel_base},
         ["mode", "channel", "batch_add_set_key_prefix_2_name"]),
        ("PUT", "/api/channel/", {"id": cid}, ["id"]),
        ("POST", "/api/token/", {"name": "t"}, []),
        ("PUT", "/api/token/", {"id": tid}, ["id"]),
        ("PUT", "/api/token/?status_only=1", {"id": tid}, ["id", "status"]),
        ("POST", "/api/user/", {"username": "u", "password": "password1"},
         ["username", "password", "display_name", "role"]),
        ("POST", "/api/user/login", {"username": "root", "password": "x"}, ["username", "password"]),
        ("PUT", "/api/option/", {"key": "Notice", "value": "v"}, ["key", "value"]),
        ("POST", "/api/setup", {"username": "r", "password": "p", "confirmPassword": "p"},
         ["username", "password", "confirmPassword", "SelfUseModeEnabled"]),
    ]
    channel_fields = ["type", "key", "name", "status", "weight", "priority", "base_url", "models", "group",
                      "model_mapping", "status_code_mapping", "auto_ban", "tag", "setting", "param_override",
                      "header_override", "other", "test_model", "openai_organization", "remark"]
    token_fields = ["name", "remain_quota", "expired_time", "unlimited_quota", "model_limits_enabled",
                    "model_limits", "allow_ips", "group", "cross_group_retry", "status"]
    problems = []

    async def send(method: str, path: str, **kwargs: Any) -> None:
        resp = await admin.http.request(method, path, headers={"New-Api-User": str(admin.user_id)}, **kwargs)
        if resp.status_code >= 500 or resp.headers.get("content-type", "").split(";")[0] != "application/json":
            problems.append((method, path, kwargs, resp.status_code, resp.text[:200]))

    for method, path, base, extra in bodies:
        fields = extra + (channel_fields if "channel" in path else token_fields if "token" in path else [])
        for field in fields:
            for value in WEIRD:
                if "channel" in path and method == "POST" and field in channel_fields:
                    body = {**base, "channel": {**channel_base, field: value}}
                else:
                    body = {**base, field: value}
                await send(method, path, json=body)
        for raw in RAW_BODIES:
            await send(method, path, content=raw)
    ids = ["0", "-1", "abc", "1.5", "99999999999999999999", "%00", "1%20", str(cid), str(tid)]
    for ref in ids:
        for method, path in (("GET", "/api/channel/{}"), ("GET", "/api/token/{}"), ("POST", "/api/token/{}/key"),
                             ("GET", "/api/user/{}"), ("DELETE", "/api/token/{}"), ("DELETE", "/api/channel/{}")):
            await send(method, path.format(ref))
    for value in ["", "-1", "abc", "1e9", "99999999999999999999", "%00", "%", "'", "\x00", "é"]:
        for path in ("/api/channel/", "/api/token/", "/api/user/", "/api/token/search"):
            for param in ("p", "page_size", "ps", "size", "status", "type", "id_sort", "keyword", "token"):
                await send("GET", path, params={param: value})
    assert not problems, problems[:5]
