"""Model metadata and vendors (/api/models/, /api/vendors/) and the upstream sync refuse bad
bodies with a 400 and store nothing. The tests share one gateway: none stores anything."""

from __future__ import annotations

from typing import Any

import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize("body", [{"name": ""}, {"name": "v" * 129}, {"name": "v", "status": 2},
                                  {"name": "v", "status": "1"}, {"name": "v", "colour": "red"},
                                  {"name": "v", "icon": "i" * 129}, {"name": "v\x00"}, {}])
async def test_vendor_bad_bodies_are_400_and_not_stored(module_admin: AdminClient, body: dict[str, Any]) -> None:
    admin = module_admin
    vendors = await m.Vendor.all().count()
    resp = await admin.http.post("/api/vendors/", json=body, headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and resp.json()["success"] is False
    assert await m.Vendor.all().count() == vendors


@pytest.mark.parametrize("body", [
    {"model_name": ""}, {"model_name": "m" * 256}, {"model_name": "m", "name_rule": 4},
    {"model_name": "m", "status": 2}, {"model_name": "m", "sync_official": True}, {"model_name": 5},
    {"model_name": "m", "vendor_id": -1}, {"model_name": "m", "tags": "t" * 256}, {"model_name": "m", "bound": []},
    {"model_name": "m", "description": "d" * 10_001},
])
async def test_model_bad_bodies_are_400_and_not_stored(module_admin: AdminClient, body: dict[str, Any]) -> None:
    admin = module_admin
    models = await m.ModelMeta.all().count()
    resp = await admin.http.post("/api/models/", json=body, headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and resp.json()["success"] is False
    assert next(iter(k for k in body if k != "model_name"), "model_name") in resp.json()["message"]
    assert await m.ModelMeta.all().count() == models


@pytest.mark.parametrize("body", [{"overwrite": [{"model_name": "o3", "fields": ["price"]}]},
                                  {"overwrite": [{"model_name": "", "fields": []}]}, {"locale": "x" * 17},
                                  {"create": "o3"}, {"force": True}])
async def test_sync_bad_bodies(module_admin: AdminClient, body: dict[str, Any]) -> None:
    admin = module_admin
    resp = await admin.http.post("/api/models/sync_upstream", json=body, headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and resp.json()["success"] is False
