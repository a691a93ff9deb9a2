"""Prices as new-api (issue 17): a user group's own ratio for a using group
(``GroupGroupRatio``), usable groups adjusted per user group
(``group_ratio_setting.group_special_usable_group``), the ``auto`` group (``AutoGroups``),
fixed prices per call, cache ratios: each an option checked when written (a bad value is
a 400 naming it, never stored: test_groups_and_prices_refused.py), each reflected in the
next request's charge (the options live in the snapshot, no database read per request), and
in ``GET /api/pricing``, ``GET /api/user/self/groups`` and ``GET /api/status``."""

from __future__ import annotations

from typing import Any

import httpx

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate.testing.logs import consume_logs
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_adapter_openai.testing.responses import CACHED_TOKENS

MODEL = "priced-model"


async def _ask(server: GatewayServer, key: str, model: str = MODEL) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        return await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": model, "messages": [{"role": "user", "content": "hello there"}]})


async def _regroup(server: GatewayServer, username: str, group: str) -> int:
    user = await m.User.get(username=username)
    await m.User.filter(id=user.id).update(group=group)
    await server.gateway.feed.publish("user", user.id)
    return user.id


async def _login(server: GatewayServer, admin: AdminClient, username: str, group: str) -> AdminClient:
    await admin.ok("POST", "/api/user/", json={"username": username, "password": ROOT_PASSWORD})
    await _regroup(server, username, group)
    await m.User.filter(username=username).update(quota=10_000_000)
    client = AdminClient(server.base_url)
    client.user_id = (await client.ok("POST", "/api/user/login",
                                      json={"username": username, "password": ROOT_PASSWORD}))["id"]
    return client


async def test_group_group_ratio_prices_the_next_request(gateway: GatewayServer, admin: AdminClient,
                                                         fake_openai: FakeOpenAI) -> None:
    """A vip user's key in the default group pays GroupGroupRatio's vip → default ratio, from
    the next request on; other users keep GroupRatio's."""
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
    await admin.set_option("ModelRatio", {MODEL: 2})
    await admin.set_option("CompletionRatio", {MODEL: 3})
    await admin.set_option("GroupRatio", {"default": 1.5, "vip": 1})
    vic = await _login(gateway, admin, "vic", "vip")
    created = await vic.ok("POST", "/api/token/", json={"name": "k", "remain_quota": 5_000_000, "group": "default",
                                                        "expired_time": -1})
    key = "sk-" + (await vic.ok("POST", f"/api/token/{created['id']}/key"))["key"]
    root_key = await admin.add_token(remain_quota=5_000_000, group="default")

    def cost(row: m.Log, group_ratio: float) -> int:
        return round((row.prompt_tokens + row.completion_tokens * 3) * 2 * group_ratio)

    assert (await _ask(gateway, key)).status_code == 200
    await admin.set_option("GroupGroupRatio", {"vip": {"default": 0.25}})
    assert (await _ask(gateway, key)).status_code == 200
    assert (await _ask(gateway, root_key)).status_code == 200
    before, after, root = await consume_logs(gateway)
    assert before.quota == cost(before, 1.5) and jsonutil.loads(before.other)["group_ratio"] == 1.5
    assert after.quota == cost(after, 0.25) and jsonutil.loads(after.other)["group_ratio"] == 0.25
    assert root.quota == cost(root, 1.5)  # root's group (default) has no special ratio
    groups = await vic.ok("GET", "/api/user/self/groups")
    assert groups["default"]["ratio"] == 0.25 and groups["vip"]["ratio"] == 1
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        visitor = (await http.get("/api/pricing")).json()
    assert visitor["group_ratio"] == {"default": 1.5}
    mine = await vic.call("GET", "/api/pricing")
    assert mine["group_ratio"] == {"default": 0.25, "vip": 1.0}
    assert mine["usable_group"] == {"default": "default", "vip": "your group"}
    await vic.close()


async def test_special_usable_groups_add_and_remove(gateway: GatewayServer, admin: AdminClient,
                                                    fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, group="svip")
    await admin.set_option("ModelRatio", {MODEL: 1})
    await admin.set_option("group_ratio_setting.group_special_usable_group",
                           {"vip": {"+:svip": "Super", "-:default": ""}, "other": {"svip": "plain name adds"}})
    vera = await _login(gateway, admin, "vera", "vip")
    groups = await vera.ok("GET", "/api/user/self/groups")
    assert set(groups) == {"vip", "svip"} and groups["svip"]["desc"] == "Super"
    refused = await vera.http.post("/api/token/", json={"name": "k", "group": "default", "expired_time": -1},
                                   headers={"New-Api-User": str(vera.user_id)})
    assert refused.status_code == 403
    created = await vera.ok("POST", "/api/token/", json={"name": "k", "remain_quota": 1_000_000, "group": "svip",
                                                         "expired_time": -1})
    key = "sk-" + (await vera.ok("POST", f"/api/token/{created['id']}/key"))["key"]
    assert (await _ask(gateway, key)).status_code == 200
    assert [d["model_name"] for d in (await vera.call("GET", "/api/pricing"))["data"]] == [MODEL]
    # the rule withdrawn: the key's group is no longer usable, checked per request
    await admin.set_option("group_ratio_setting.group_special_usable_group", {})
    refused_now = await _ask(gateway, key)
    assert refused_now.status_code == 403 and "no longer usable" in refused_now.json()["error"]["message"]
    await vera.close()


async def test_auto_group_uses_the_first_group_serving_the_model(gateway: GatewayServer, admin: AdminClient,
                                                                fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="cheap-model", group="cheap")
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},cheap-model", group="default")
    await admin.set_option("ModelRatio", {MODEL: 1, "cheap-model": 1})
    await admin.set_option("CompletionRatio", {MODEL: 1, "cheap-model": 1})
    await admin.set_option("GroupRatio", {"default": 1, "cheap": 0.5})
    await admin.set_option("UserUsableGroups", {"default": "Default", "cheap": "Cheap", "auto": "Auto"})
    await admin.set_option("AutoGroups", ["cheap", "default"])
    key = await admin.add_token(remain_quota=5_000_000, group="auto")
    assert (await _ask(gateway, key, "cheap-model")).status_code == 200
    assert (await _ask(gateway, key, MODEL)).status_code == 200  # only the default group serves it
    cheap, fallback = await consume_logs(gateway)
    assert (cheap.group, jsonutil.loads(cheap.other)["group_ratio"]) == ("cheap", 0.5)
    assert cheap.quota == round((cheap.prompt_tokens + cheap.completion_tokens) * 0.5)
    assert (fallback.group, jsonutil.loads(fallback.other)["group_ratio"]) == ("default", 1.0)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        listed = (await http.get("/v1/models", headers={"Authorization": f"Bearer {key}"})).json()
    assert {m_["id"] for m_ in listed["data"]} == {MODEL, "cheap-model"}
    groups = await admin.ok("GET", "/api/user/self/groups")
    assert groups["auto"] == {"ratio": "auto", "desc": "Auto"}
    assert (await admin.call("GET", "/api/pricing"))["auto_groups"] == ["cheap", "default"]
    # a group the user may not use is never an auto group
    await admin.set_option("UserUsableGroups", {"default": "Default", "auto": "Auto"})
    assert (await _ask(gateway, key, "cheap-model")).status_code == 200
    assert (await consume_logs(gateway))[-1].group == "default"


async def test_fixed_price_per_call_and_pricing_shape(gateway: GatewayServer, admin: AdminClient,
                                                      fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},by-token")
    await admin.set_option("ModelPrice", {MODEL: 0.01})
    await admin.set_option("ModelRatio", {"by-token": 2})
    await admin.set_option("CompletionRatio", {"by-token": 4})
    await admin.set_option("CacheRatio", {"by-token": 0.1})
    await admin.set_option("GroupRatio", {"default": 2})
    key = await admin.add_token(remain_quota=5_000_000)
    assert (await _ask(gateway, key)).status_code == 200
    (row,) = await consume_logs(gateway)
    assert row.quota == round(0.01 * 500_000 * 2)  # $0.01 per call × QuotaPerUnit × group ratio
    assert jsonutil.loads(row.other)["model_price"] == 0.01
    priced = {item["model_name"]: item for item in (await admin.call("GET", "/api/pricing"))["data"]}
    assert priced[MODEL]["quota_type"] == 1 and priced[MODEL]["model_price"] == 0.01
    assert priced[MODEL]["model_ratio"] == 0 and "cache_ratio" not in priced[MODEL]
    assert (priced["by-token"]["quota_type"], priced["by-token"]["model_ratio"],
            priced["by-token"]["completion_ratio"], priced["by-token"]["cache_ratio"]) == (0, 2, 4, 0.1)
    assert priced["by-token"]["enable_groups"] == ["default"]


async def test_cache_ratios_are_billed_and_follow_the_option(gateway: GatewayServer, admin: AdminClient,
                                                            fake_openai: FakeOpenAI) -> None:
    model = "gpt-4o-mini"
    await admin.add_channel(base_url=fake_openai.base_url, models=model)
    await admin.set_option("ModelRatio", {model: 1})
    await admin.set_option("CompletionRatio", {model: 2})
    await admin.set_option("CacheRatio", {model: 0.5})
    key = await admin.add_token(remain_quota=50_000_000)

    async def ask() -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=30) as http:
            resp = await http.post("/v1/responses", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": model, "input": "a question worth caching",
                                         "prompt_cache_key": "conv-1"})
        assert resp.status_code == 200, resp.text
        usage: dict[str, Any] = resp.json()["usage"]
        return usage

    def cost(usage: dict[str, Any], cache_ratio: float) -> int:
        cached = usage["input_tokens_details"]["cached_tokens"]
        return round(usage["input_tokens"] - cached + cached * cache_ratio + usage["output_tokens"] * 2)

    first = await ask()
    await admin.set_option("CacheRatio", {model: 0.1})
    second = await ask()
    rows = await consume_logs(gateway)
    assert first["input_tokens_details"]["cached_tokens"] == CACHED_TOKENS
    assert [r.quota for r in rows] == [cost(first, 0.5), cost(second, 0.1)]
    assert jsonutil.loads(rows[1].other)["cache_ratio"] == 0.1


async def test_status_shows_the_quota_display(gateway: GatewayServer, admin: AdminClient) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        default = (await http.get("/api/status")).json()["data"]
        assert (default["quota_display_type"], default["display_in_currency"], default["usd_exchange_rate"],
                default["custom_currency_symbol"], default["custom_currency_exchange_rate"],
                default["default_use_auto_group"]) == ("USD", True, 7.3, "\u00a4", 1, False)
        await admin.set_option("general_setting.quota_display_type", "CUSTOM")
        await admin.set_option("general_setting.custom_currency_symbol", "\u20ac")
        await admin.set_option("general_setting.custom_currency_exchange_rate", 0.92)
        await admin.set_option("DefaultUseAutoGroup", True)
        custom = (await http.get("/api/status")).json()["data"]
        assert (custom["quota_display_type"], custom["custom_currency_symbol"],
                custom["custom_currency_exchange_rate"], custom["default_use_auto_group"]) == ("CUSTOM", "\u20ac",
                                                                                               0.92, True)
        await admin.set_option("general_setting.quota_display_type", "TOKENS")
        tokens = (await http.get("/api/status")).json()["data"]
        assert tokens["display_in_currency"] is False
        await admin.set_option("general_setting.quota_display_type", "CNY")
        await admin.set_option("USDExchangeRate", 7.1)
        cny = (await http.get("/api/status")).json()["data"]
        assert (cny["display_in_currency"], cny["usd_exchange_rate"]) == (True, 7.1)


async def test_built_in_tables_price_dated_and_custom_models_until_an_admin_replaces_them(
        gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    """new-api's built-in tables, found as new-api finds a model: a dated snapshot priced by its
    own entries (ratio 1.25, cache reads 0.5, the gpt-4o family's completion ratio 4), a custom
    GPT by the ``gpt-4-gizmo-*`` wildcard ($0.10 a call). A stored ModelRatio is the whole
    table: the snapshot it leaves out is refused, until ``rest_model_ratio`` (root) restores
    the built-in one."""
    dated, gizmo = "gpt-4o-2024-08-06", "gpt-4-gizmo-g-2fkFE8rbu"
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{dated},{gizmo}")
    key = await admin.add_token(remain_quota=50_000_000)

    async def ask(model: str) -> httpx.Response:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=30) as http:
            return await http.post("/v1/responses", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": model, "input": "a question worth caching",
                                         "prompt_cache_key": "conv-1"})

    first = await ask(dated)
    assert first.status_code == 200, first.text
    assert (await _ask(gateway, key, gizmo)).status_code == 200
    usage = first.json()["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    assert cached == CACHED_TOKENS
    by_token, by_call = await consume_logs(gateway)
    assert by_token.quota == round((usage["input_tokens"] - cached + cached * 0.5 + usage["output_tokens"] * 4) * 1.25)
    assert by_call.quota == round(0.10 * 500_000) and jsonutil.loads(by_call.other)["model_price"] == 0.1
    priced = {item["model_name"]: item for item in (await admin.call("GET", "/api/pricing"))["data"]}
    assert (priced[dated]["model_ratio"], priced[dated]["completion_ratio"], priced[dated]["cache_ratio"]) == (
        1.25, 4, 0.5)
    assert (priced[gizmo]["quota_type"], priced[gizmo]["model_price"]) == (1, 0.1)

    await admin.set_option("ModelRatio", {"gpt-4o": 1.25})  # the whole table: the snapshot removed
    refused = await ask(dated)
    assert refused.status_code == 500 and "no ratio or price" in refused.text
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.post("/api/option/rest_model_ratio")).status_code == 401
    assert await admin.ok("POST", "/api/option/rest_model_ratio") is None
    assert not await m.Option.filter(key="ModelRatio").exists()
    assert (await ask(dated)).status_code == 200
    stored = {item["key"]: item["value"] for item in await admin.ok("GET", "/api/option/")}
    assert jsonutil.loads(stored["ModelRatio"])[dated] == 1.25
