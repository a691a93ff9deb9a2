"""The Uptime Kuma groups option (``console_setting.uptime_kuma_groups``) refuses a bad value
with a 400 and stores nothing (the status page: test_management_uptime.py). The tests share one
gateway: none stores anything."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        {"categoryName": "x"},
        [{"categoryName": "A", "url": "https://k.example", "slug": "bad slug"}],
        [{"categoryName": "A", "url": "javascript:alert(1)", "slug": "s"}],
        [{"url": "https://k.example", "slug": "s"}],
        [{"categoryName": "A" * 51, "url": "https://k.example", "slug": "s"}],
        [{"categoryName": "A", "url": "https://k.example", "slug": "s", "description": "d" * 201}],
        [{"categoryName": "A", "url": "https://k.example", "slug": "s"}] * 2,
        [{"categoryName": f"G{i}", "url": "https://k.example", "slug": "s"} for i in range(21)],
    ],
)
async def test_groups_option_is_checked(module_admin: AdminClient, value: Any) -> None:
    admin = module_admin
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    resp = await admin.http.put(
        "/api/option/",
        json={"key": "console_setting.uptime_kuma_groups", "value": text},
        headers={"New-Api-User": str(admin.user_id)},
    )
    assert resp.status_code == 400 and resp.json()["success"] is False
    assert not await m.Option.filter(key="console_setting.uptime_kuma_groups").exists()
