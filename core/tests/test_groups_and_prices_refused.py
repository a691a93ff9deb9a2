"""The price and group options refuse a bad value with a 400 naming it and store nothing
(the options' effect on prices: test_groups_and_prices.py). The tests share one gateway: none
stores anything."""

from __future__ import annotations

from typing import Any

import pytest

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = "priced-model"


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("GroupGroupRatio", {"vip": {"default": -1}}, "vip.default"),
        ("GroupGroupRatio", {"vip": 0.5}, "vip"),
        ("GroupGroupRatio", {"vip": {"default": "half"}}, "vip.default"),
        ("GroupGroupRatio", {"vip": {"x" * 65: 1}}, "GroupGroupRatio"),
        ("GroupGroupRatio", "[1]", "GroupGroupRatio"),
        ("group_ratio_setting.group_special_usable_group", {"vip": {"+:": "empty"}}, "vip.+:"),
        ("group_ratio_setting.group_special_usable_group", {"vip": {"+:svip": 3}}, "vip.+:svip"),
        ("group_ratio_setting.group_special_usable_group", {"vip": ["svip"]}, "vip"),
        ("AutoGroups", ["default", "default"], "AutoGroups"),
        ("AutoGroups", ["auto"], "AutoGroups"),
        ("AutoGroups", {"default": 1}, "AutoGroups"),
        ("AutoGroups", [""], "AutoGroups"),
        ("DefaultUseAutoGroup", "sometimes", "DefaultUseAutoGroup"),
        ("QuotaRemindThreshold", -1, "QuotaRemindThreshold"),
        ("QuotaRemindThreshold", "1.5", "QuotaRemindThreshold"),
        ("general_setting.custom_currency_symbol", "TOO-LONG-SYMBOL", "custom_currency_symbol"),
        ("general_setting.custom_currency_exchange_rate", 0, "custom_currency_exchange_rate"),
        ("ModelPrice", {MODEL: -0.01}, MODEL),
        ("CacheRatio", {MODEL: "cheap"}, MODEL),
        ("CreateCacheRatio", {MODEL: 1e300}, MODEL),
    ],
)
async def test_bad_price_options_are_refused_by_name(
    module_admin: AdminClient, key: str, value: Any, named: str
) -> None:
    admin = module_admin
    sent = value if isinstance(value, str) else jsonutil.dumps_str(value)
    resp = await admin.http.put(
        "/api/option/", json={"key": key, "value": sent}, headers={"New-Api-User": str(admin.user_id)}
    )
    body = resp.json()
    assert resp.status_code == 400 and body["success"] is False and named in body["message"], body
    assert not await m.Option.filter(key=key).exists()
