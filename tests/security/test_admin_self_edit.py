"""An admin cannot raise their own quota or move their own group (issue 26, P1): as new-api's
UpdateUser, ``PUT /api/user/`` edits only a user of a lower role, or anyone for root, so an
admin's own row (the same role) is refused with new-api's message and nothing changes; root
may still edit itself."""

from __future__ import annotations

from faregate.db import models as m
from faregate.management.user_admin import NO_PERMISSION_HIGHER_LEVEL
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer


async def _admin_session(server: GatewayServer, root: AdminClient, username: str) -> AdminClient:
    await root.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD,
                                               "role": m.ROLE_ADMIN})
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": ROOT_PASSWORD}))["id"]
    return client


async def test_an_admin_cannot_set_their_own_quota_or_group(gateway: GatewayServer, admin: AdminClient) -> None:
    ada = await _admin_session(gateway, admin, "ada")
    before = await m.User.get(id=ada.user_id)
    loaded = await ada.ok("GET", f"/api/user/{ada.user_id}")  # the console's edit form: the whole user back
    for change in ({"quota": 10**12, "group": "svip"}, {"quota": 10**12}, {"group": "svip"},
                   {**loaded, "quota": 10**12, "group": "svip"}, {"display_name": "Ada", "remark": "mine"}):
        refused = await ada.call("PUT", "/api/user/", json={"id": ada.user_id, **change})
        assert refused == {"success": False, "message": NO_PERMISSION_HIGHER_LEVEL}, change
    after = await m.User.get(id=ada.user_id)
    assert (after.quota, after.group, after.display_name, after.remark) == (
        before.quota, before.group, before.display_name, before.remark)
    assert not await m.Log.filter(type=m.LOG_MANAGE, user_id=ada.user_id).exists()
    # another admin's row is refused the same way; a common user's is the admin's to edit
    await _admin_session(gateway, admin, "bea")
    bea = await m.User.get(username="bea")
    peer = await ada.call("PUT", "/api/user/", json={"id": bea.id, "quota": 1})
    assert peer == {"success": False, "message": NO_PERMISSION_HIGHER_LEVEL}
    common = (await admin.ok("POST", "/api/user/", json={"username": "cal", "password": ROOT_PASSWORD}))["id"]
    assert (await ada.ok("PUT", "/api/user/", json={"id": common, "quota": 4321, "group": "svip"}))["quota"] == 4321
    # what the admin may change of themselves goes through the self-service route (not quota, not group)
    assert (await ada.ok("PUT", "/api/user/self", json={"display_name": "Ada", "quota": 10**12,
                                                        "group": "svip"}))["display_name"] == "Ada"
    mine = await m.User.get(id=ada.user_id)
    assert (mine.quota, mine.group) == (before.quota, before.group)
    await ada.close()


async def test_root_may_edit_itself(gateway: GatewayServer, admin: AdminClient) -> None:
    """new-api's canManageTargetRole lets root manage every user, its own row included."""
    data = await admin.ok("PUT", "/api/user/", json={"id": admin.user_id, "quota": 777_000, "group": "svip"})
    assert (data["quota"], data["group"]) == (777_000, "svip")
    root = await m.User.get(id=admin.user_id)
    assert (root.quota, root.group) == (777_000, "svip")
