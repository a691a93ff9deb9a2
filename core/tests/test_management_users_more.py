"""Users beyond create/list (issue 10, users): search, update (quota as a difference),
manage with new-api's role rules, delete; self groups, models, profile, password,
deletion, invitation code."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI


async def _login(server: GatewayServer, username: str, password: str = ROOT_PASSWORD) -> AdminClient:
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": password}))["id"]
    return client


async def _user(server: GatewayServer, admin: AdminClient, username: str, role: int = m.ROLE_USER) -> int:
    data = await admin.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD,
                                                      "role": role})
    return int(data["id"])


async def test_search_escapes_wildcards(gateway: GatewayServer, admin: AdminClient) -> None:
    await _user(gateway, admin, "dave_1")
    await _user(gateway, admin, "daveX1")
    found = await admin.ok("GET", "/api/user/search", params={"keyword": "dave_"})
    assert [u["username"] for u in found["items"]] == ["dave_1"]
    assert (await admin.ok("GET", "/api/user/search", params={"keyword": "%"}))["total"] == 0
    too_long = await admin.call("GET", "/api/user/search", params={"keyword": "x" * 65})
    assert too_long["success"] is False


async def test_update_applies_quota_as_a_difference_and_logs_it(gateway: GatewayServer, admin: AdminClient) -> None:
    uid = await _user(gateway, admin, "erin")
    data = await admin.ok("PUT", "/api/user/", json={"id": uid, "quota": 12345, "display_name": "Erin"})
    assert (data["quota"], data["display_name"]) == (12345, "Erin")
    rows = await m.Log.filter(type=m.LOG_MANAGE, user_id=uid)
    assert len(rows) == 1 and "12345" in rows[0].content
    assert (await admin.call("PUT", "/api/user/", json={"id": uid, "quota": 2**60}))["success"] is False


async def test_manage_follows_new_apis_role_rules(gateway: GatewayServer, admin: AdminClient) -> None:
    uid = await _user(gateway, admin, "frank")
    assert await admin.ok("POST", "/api/user/manage", json={"id": uid, "action": "promote"}) == {
        "role": m.ROLE_ADMIN, "status": m.USER_ENABLED}
    frank = await _login(gateway, "frank")
    root_id = admin.user_id
    refused = await frank.call("POST", "/api/user/manage", json={"id": root_id, "action": "disable"})
    assert refused["success"] is False
    other = await _user(gateway, admin, "gina")
    assert (await frank.call("POST", "/api/user/manage", json={"id": other, "action": "promote"}))["success"] is False
    assert (await frank.ok("POST", "/api/user/manage", json={"id": other, "action": "disable"}))["status"] == \
        m.USER_DISABLED
    assert (await admin.call("POST", "/api/user/manage", json={"id": root_id, "action": "demote"}))["success"] is False
    assert (await admin.ok("POST", "/api/user/manage", json={"id": uid, "action": "demote"}))["role"] == m.ROLE_USER
    await frank.close()


async def test_admin_removes_a_users_outside_login(gateway: GatewayServer, admin: AdminClient) -> None:
    """new-api's ``DELETE /api/user/{id}/oauth/bindings/{provider_id}`` beside
    ``…/bindings/{binding_type}``: an admin removes a user's binding (a missing one is no
    error, as new-api), never one of a user of the same or a higher role."""
    uid = await _user(gateway, admin, "hana")
    peer = await _user(gateway, admin, "ivan", m.ROLE_ADMIN)
    for user_id, provider in ((uid, "github"), (uid, "oidc"), (peer, "github")):
        await m.UserBinding.create(user_id=user_id, provider=provider, subject=f"s-{user_id}", created_at=1)
    ivan = await _login(gateway, "ivan")
    assert await ivan.call("DELETE", f"/api/user/{uid}/oauth/bindings/github") == {"success": True,
                                                                                   "message": "success"}
    assert [b["provider"] for b in await ivan.ok("GET", f"/api/user/{uid}/oauth/bindings")] == ["oidc"]
    assert (await ivan.ok("DELETE", f"/api/user/{uid}/oauth/bindings/github")) is None  # gone already: fine
    assert (await admin.call("DELETE", f"/api/user/{uid}/oauth/bindings/Bad Name!"))["success"] is False
    refused = await ivan.call("DELETE", f"/api/user/{peer}/oauth/bindings/github")
    assert refused["success"] is False and await m.UserBinding.filter(user_id=peer).exists()
    assert (await ivan.call("DELETE", "/api/user/999999/oauth/bindings/github"))["message"] == "user not found"
    assert await m.Log.filter(type=m.LOG_MANAGE, user_id=uid).count() == 1
    await ivan.close()


async def test_delete_user_removes_their_keys(gateway: GatewayServer, admin: AdminClient,
                                              fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o")
    uid = await _user(gateway, admin, "hank")
    hank = await _login(gateway, "hank")
    created = await hank.ok("POST", "/api/token/", json={"name": "h", "remain_quota": 1000, "expired_time": -1})
    key = "sk-" + (await hank.ok("POST", f"/api/token/{created['id']}/key"))["key"]
    await admin.ok("DELETE", f"/api/user/{uid}")
    assert not await m.User.filter(id=uid).exists() and not await m.Token.filter(user_id=uid).exists()
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]})
    assert resp.status_code == 401
    await hank.close()


async def test_self_groups_models_profile_and_deletion(gateway: GatewayServer, admin: AdminClient,
                                                       fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o,gpt-4o-mini")
    await admin.add_channel(base_url=fake_openai.base_url, models="secret-model", group="svip")
    await _user(gateway, admin, "ivy")
    ivy = await _login(gateway, "ivy")
    groups = await ivy.ok("GET", "/api/user/self/groups")
    assert "default" in groups and "svip" not in groups and groups["default"]["ratio"] == 1
    assert await ivy.ok("GET", "/api/user/models") == ["gpt-4o", "gpt-4o-mini"]
    code = await ivy.ok("GET", "/api/user/aff")
    assert len(code) == 4 and await ivy.ok("GET", "/api/user/aff") == code
    wrong = await ivy.call("PUT", "/api/user/self", json={"password": "another-pw-123", "original_password": "x"})
    assert wrong["success"] is False
    await ivy.ok("PUT", "/api/user/self", json={"password": "another-pw-123", "original_password": ROOT_PASSWORD,
                                                "display_name": "Ivy"})
    await ivy.close()
    ivy = await _login(gateway, "ivy", "another-pw-123")
    await ivy.ok("DELETE", "/api/user/self")
    assert not await m.User.filter(username="ivy").exists()
    assert (await admin.call("DELETE", "/api/user/self"))["success"] is False  # root stays
    await ivy.close()


async def test_notification_settings_are_typed_and_secrets_not_echoed(gateway: GatewayServer,
                                                                      admin: AdminClient) -> None:
    await _user(gateway, admin, "jill")
    jill = await _login(gateway, "jill")
    good = {"notify_type": "webhook", "quota_warning_threshold": 5000, "webhook_url": "https://hooks.example/x",
            "webhook_secret": "whsec-very-secret", "gotify_priority": 3, "record_ip_log": True}
    saved = await jill.ok("PUT", "/api/user/setting", json=good)
    assert saved["webhook_secret"] is True and saved["webhook_url"] == "https://hooks.example/x"
    assert "whsec-very-secret" not in str(await jill.ok("GET", "/api/user/setting"))
    for bad in ({"notify_type": "pager"}, {"quota_warning_threshold": -1}, {"quota_warning_threshold": 0},
                {"notify_type": "webhook", "webhook_url": ""}, {"webhook_url": "file:///etc/passwd"},
                {"gotify_priority": 11}, {"record_ip_log": "yes"}, {"upstream_model_update_notify_enabled": "x"}):
        resp = await jill.http.put("/api/user/setting", json={**good, **bad},
                                   headers={"New-Api-User": str(jill.user_id)})
        assert resp.status_code == 400 and resp.json()["success"] is False, bad
    # an admin's setting: from a common user it is ignored, as in new-api
    saved = await jill.ok("PUT", "/api/user/setting", json={**good, "upstream_model_update_notify_enabled": True})
    assert "upstream_model_update_notify_enabled" not in saved
    await jill.close()


async def test_admin_views_count_the_quota_workers_hold(gateway: GatewayServer, admin: AdminClient,
                                                        fake_openai: FakeOpenAI) -> None:
    """A relayed request leases a chunk of the owner's quota to the worker; the admin's
    list, search and detail show the balance with it, as /api/user/self does (they showed
    the stored balance alone, which stood still while the user spent)."""
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini")
    key = await admin.add_token(unlimited=True)
    async with httpx.AsyncClient() as http:
        resp = await http.post(gateway.base_url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 200
    assert await m.QuotaLease.filter(kind="user", ref_id=admin.user_id).exists(), "the test needs a lease"
    me = await admin.ok("GET", "/api/user/self")
    listed = next(u for u in (await admin.ok("GET", "/api/user/"))["items"] if u["id"] == admin.user_id)
    found = (await admin.ok("GET", "/api/user/search", params={"keyword": "root"}))["items"][0]
    detail = await admin.ok("GET", f"/api/user/{admin.user_id}")
    assert listed["quota"] == found["quota"] == detail["quota"] == me["quota"]
    stored = (await m.User.get(id=admin.user_id)).quota
    assert me["quota"] > stored


#: a view of the user's balance, the body a PUT sends, and how many reads of the user's row
#: come before the one it shows (a PUT's: its own before the write, the change feed's reload)
USER_VIEWS = [
    ("GET", "/api/user/self", None, 0),
    ("GET", "/api/user/", None, 0),
    ("GET", "/api/user/search?keyword=root", None, 0),
    ("GET", "/api/user/{id}", None, 0),
    ("PUT", "/api/user/", {"remark": "leased"}, 2),
    ("PUT", "/api/user/self", {"display_name": "leased"}, 2),
]


@pytest.mark.parametrize(("method", "path", "body", "reads_before"), USER_VIEWS,
                         ids=[f"{method} {path}" for method, path, _, _ in USER_VIEWS])
async def test_a_users_view_reads_the_quota_and_its_leases_at_one_instant(
        gateway: GatewayServer, admin: AdminClient, monkeypatch: pytest.MonkeyPatch,
        method: str, path: str, body: dict[str, Any] | None, reads_before: int) -> None:
    """A worker takes a lease out of the user's quota right after the view reads the user's
    row: the quota shown (the row's and the leases' together) is still what the user has.
    Read apart, the leases read after the row counted the new lease's quota twice."""
    from faregate.testing.interleave import after_select

    assert admin.user_id is not None
    total = (await m.User.get(id=admin.user_id)).quota
    assert not await m.QuotaLease.filter(kind="user", ref_id=admin.user_id).exists()
    ledger = gateway.gateway.ledger
    owner = admin.user_id
    # after the earlier reads of the row (a PUT's own, the change feed's reload)
    leases = after_select(monkeypatch, lambda: ledger.reserve(owner, None, 100), containing="aff_history",
                          skip=reads_before)
    json = None if body is None else {**body, "id": owner} if method == "PUT" and "self" not in path else body
    data = await admin.ok(method, path.format(id=owner), json=json)
    monkeypatch.undo()
    assert not leases, "the lease was taken during the request"
    assert await m.QuotaLease.filter(kind="user", ref_id=owner).exists()
    shown = next(u for u in data["items"] if u["id"] == owner) if "items" in data else data
    assert shown["quota"] == total
