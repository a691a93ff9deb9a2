"""The dashboard (issue 10): ``/api/data`` sums of consumption per model and hour (all,
per user, self), and ``GET /api/models``, the models a user reaches per channel type."""

from __future__ import annotations

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

HOUR = 1_700_000_000 - 1_700_000_000 % 3600


async def _user(gateway: GatewayServer, admin: AdminClient, name: str) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": name, "password": ROOT_PASSWORD})
    client = AdminClient(gateway.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login", json={"username": name, "password": ROOT_PASSWORD}))[
        "id"]
    return client


async def test_quota_data_per_model_hour(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _user(gateway, admin, "spender")
    rows = [(user.user_id, "spender", HOUR + 60, "gpt-4o", 100), (user.user_id, "spender", HOUR + 120, "gpt-4o", 50),
            (admin.user_id, "root", HOUR + 3700, "gpt-4o", 7), (admin.user_id, "root", HOUR + 30, "claude", 3)]
    await m.Log.bulk_create([m.Log(user_id=uid, username=name, created_at=t, type=m.LOG_CONSUME, model_name=model,
                                   quota=q, prompt_tokens=1, completion_tokens=2) for uid, name, t, model, q in rows])
    await m.Log.create(user_id=user.user_id, username="spender", created_at=HOUR + 5, type=m.LOG_ERROR,
                       model_name="gpt-4o", quota=0)
    span = {"start_timestamp": HOUR, "end_timestamp": HOUR + 7200}
    everyone = await admin.ok("GET", "/api/data/", params=span)
    assert [(r["created_at"], r["model_name"], r["count"], r["quota"], r["token_used"]) for r in everyone] == [
        (HOUR, "claude", 1, 3, 3), (HOUR, "gpt-4o", 2, 150, 6), (HOUR + 3600, "gpt-4o", 1, 7, 3)]
    one = await admin.ok("GET", "/api/data/", params={**span, "username": "spender"})
    assert [(r["username"], r["quota"]) for r in one] == [("spender", 150)]
    mine = await user.ok("GET", "/api/data/self", params=span)
    assert [(r["model_name"], r["quota"]) for r in mine] == [("gpt-4o", 150)]
    users = await admin.ok("GET", "/api/data/users", params=span)
    assert [(r["username"], r["quota"], r["count"]) for r in users] == [("spender", 150, 2), ("root", 10, 2)]
    await user.close()


async def test_quota_data_by_api_key(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _user(gateway, admin, "keyholder")
    rows = [(HOUR + 60, "gpt-4o", "ci", 10), (HOUR + 70, "gpt-4o", "laptop", 20), (HOUR + 80, "gpt-4o", "ci", 1),
            (HOUR + 3700, "claude", "ci", 4)]
    await m.Log.bulk_create([m.Log(user_id=user.user_id, username="keyholder", created_at=t, type=m.LOG_CONSUME,
                                   model_name=model, token_name=key, quota=q, prompt_tokens=1, completion_tokens=1)
                             for t, model, key, q in rows])
    span = {"start_timestamp": HOUR, "end_timestamp": HOUR + 7200}
    plain = await user.ok("GET", "/api/data/self", params=span)
    assert [(r["model_name"], r["quota"], r.get("token_name")) for r in plain] == [("gpt-4o", 31, None),
                                                                                  ("claude", 4, None)]
    mine = await user.ok("GET", "/api/data/self", params={**span, "by_token": "true"})
    assert sorted((r["created_at"], r["model_name"], r["token_name"], r["count"], r["quota"]) for r in mine) == [
        (HOUR, "gpt-4o", "ci", 2, 11), (HOUR, "gpt-4o", "laptop", 1, 20), (HOUR + 3600, "claude", "ci", 1, 4)]
    theirs = await admin.ok("GET", "/api/data/", params={**span, "username": "keyholder", "by_token": "1"})
    assert sorted((r["username"], r["token_name"], r["quota"]) for r in theirs) == [
        ("keyholder", "ci", 4), ("keyholder", "ci", 11), ("keyholder", "laptop", 20)]
    await user.close()


async def test_quota_data_ranges_are_required_and_bounded(gateway: GatewayServer, admin: AdminClient) -> None:
    resp = await admin.http.get("/api/data/", headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and "start_timestamp" in resp.json()["message"]
    for params in ({"start_timestamp": "x", "end_timestamp": 1}, {"start_timestamp": 10, "end_timestamp": 5},
                   {"start_timestamp": -1, "end_timestamp": 5}, {"start_timestamp": 0, "end_timestamp": 2**70}):
        assert (await admin.call("GET", "/api/data/", params=params))["success"] is False
    too_long = await admin.call("GET", "/api/data/self", params={"start_timestamp": 0, "end_timestamp": 31 * 86400})
    assert too_long["success"] is False and "30 days" in too_long["message"]


async def test_model_catalogues_of_the_installed_providers(gateway: GatewayServer, admin: AdminClient) -> None:
    user = await _user(gateway, admin, "viewer")
    by_type = await user.ok("GET", "/api/models")
    assert "gpt-4o" in by_type["1"] and by_type["43"] == ["deepseek-chat", "deepseek-reasoner"]
    assert any(model.startswith("claude-") for model in by_type["14"])
    assert by_type["8"] == []  # Custom: a type served, no catalogue
    catalog = {m["id"]: m for m in await admin.ok("GET", "/api/channel/models")}
    assert catalog["gpt-4o"] == {"id": "gpt-4o", "object": "model", "created": 1626777600, "owned_by": "openai"}
    assert catalog["claude-3-5-haiku-latest"]["owned_by"] == "anthropic"
    assert len(catalog) == len({model for models in by_type.values() for model in models})
    refused = await user.call("GET", "/api/channel/models")
    assert refused["success"] is False
    await user.close()
