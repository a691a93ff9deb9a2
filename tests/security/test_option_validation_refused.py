"""Every option has a declared type and range (issue 8, #4): a bad value is a 400 naming the
option and is never stored. The tests share one gateway: none stores anything."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

BAD: list[tuple[str, Any]] = [
    ("ModelRatio", "notjson"),
    ("ModelRatio", "[1, 2]"),
    ("ModelRatio", '{"gpt-4o": -1}'),
    ("ModelRatio", '{"gpt-4o": "abc"}'),
    ("ModelRatio", '{"gpt-4o": 1e309}'),
    ("ModelPrice", '{"gpt-4o": "abc"}'),
    ("GroupRatio", '{"default": -0.5}'),
    ("QuotaPerUnit", "1e309"),
    ("QuotaPerUnit", "nan"),
    ("QuotaPerUnit", "0"),
    ("RetryTimes", "-1"),
    ("RetryTimes", "9223372036854775808"),
    ("RetryTimes", "two"),
    ("PreConsumedQuota", "1.5"),
    ("AutomaticRetryStatusCodes", "500-abc"),
    ("AutomaticDisableStatusCodes", "99"),
    ("LogConsumeEnabled", "maybe"),
    ("general_setting.quota_display_type", "EUR"),
    ("UserUsableGroups", '{"vip": 1}'),
    ("NoSuchOption", "1"),
]


async def _put(admin: AdminClient, key: str, value: Any) -> httpx.Response:
    return await admin.http.put("/api/option/", json={"key": key, "value": value},
                                headers={"New-Api-User": str(admin.user_id)})


@pytest.mark.parametrize(("key", "value"), BAD, ids=[f"{k}={v}" for k, v in BAD])
async def test_bad_values_are_refused_by_name(module_admin: AdminClient, key: str, value: Any) -> None:
    admin = module_admin
    stored = await m.Option.filter(key=key).count()
    resp = await _put(admin, key, value)
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["success"] is False and key in body["message"]
    assert await m.Option.filter(key=key).count() == stored
