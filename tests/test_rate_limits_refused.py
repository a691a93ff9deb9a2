"""The rate-limit options refuse a bad value, naming it, and store nothing (the limits
themselves: test_rate_limits.py). The tests share one gateway: none stores anything."""

from __future__ import annotations

import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ModelRequestRateLimitGroup", '{"default": [1, 0]}'),
        ("ModelRequestRateLimitGroup", '{"default": [-1, 5]}'),
        ("ModelRequestRateLimitGroup", '{"default": 3}'),
        ("ModelRequestRateLimitCount", "-1"),
        ("ModelRequestRateLimitDurationMinutes", "0"),
    ],
)
async def test_bad_options_are_400_naming_them(module_admin: AdminClient, key: str, value: str) -> None:
    body = await module_admin.call("PUT", "/api/option/", json={"key": key, "value": value})
    assert body["success"] is False and key in body["message"]
    assert not await m.Option.filter(key=key).exists()
