"""Testing a channel, listing its upstream's models and asking its balance (issue 10,
channels)."""

from __future__ import annotations

import asyncio
import datetime

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI, Fault

KEY = "sk-probe-upstream-0123456789"


async def test_channel_test_measures_and_shields(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI(key=KEY) as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key=KEY)
        good = await admin.http.get(f"/api/channel/test/{cid}", headers={"New-Api-User": str(admin.user_id)})
        body = good.json()
        assert body["success"] is True and body["time"] > 0
        assert fake.requests[-1]["json"]["model"] == "gpt-4o-mini"
        row = await m.Channel.get(id=cid)
        assert row.test_time > 0 and row.response_time >= 0
        fake.fail_next(401, f"Incorrect API key provided: {KEY}")
        bad = (await admin.http.get(f"/api/channel/test/{cid}", params={"model": "gpt-4o"},
                                    headers={"New-Api-User": str(admin.user_id)})).json()
        assert bad["success"] is False and "401" in bad["message"] and KEY not in bad["message"]
        models = await admin.ok("GET", f"/api/channel/fetch_models/{cid}")
        assert "gpt-4o" in models
        assert await admin.ok("GET", "/api/channel/test") is None
        for _ in range(50):
            if len(fake.requests) >= 4:
                break
            await asyncio.sleep(0.05)
        assert len(fake.requests) >= 4  # the background round tested the channel again


async def test_balance_of_one_channel(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI(key=KEY) as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key=KEY)
        answer = await admin.call("GET", f"/api/channel/update_balance/{cid}")
        assert answer["success"] is True and answer["balance"] == 120 - 20.5
        assert answer["data"]["balance"] == 99.5 and answer["data"]["balance_updated_time"] > 0
        row = await m.Channel.get(id=cid)
        assert row.balance == 99.5 and row.balance_updated_time > 0
        subscription, usage = fake.requests[-2:]
        assert subscription["path"] == "/v1/dashboard/billing/subscription"
        today = datetime.date.today()
        assert usage["path"] == "/v1/dashboard/billing/usage"
        assert usage["query"] == {"start_date": today.replace(day=1).isoformat(), "end_date": today.isoformat()}
        fake.has_payment_method, fake.total_usage = False, 13000
        assert (await admin.call("GET", f"/api/channel/update_balance/{cid}"))["balance"] == -10
        start = fake.requests[-1]["query"]["start_date"]
        assert start == (today - datetime.timedelta(days=100)).isoformat()

        # upstream failures: success false, redacted, bounded, never a 500
        fake.fail_next(401, f"Incorrect API key provided: {KEY}")
        failed = await admin.call("GET", f"/api/channel/update_balance/{cid}")
        assert failed["success"] is False and "401" in failed["message"] and KEY not in failed["message"]
        fake.fail_next(500, "x" * 5000)
        failed = await admin.call("GET", f"/api/channel/update_balance/{cid}")
        assert failed["success"] is False and len(failed["message"]) <= 300
        fake.push_fault(Fault("malformed_json"))
        failed = await admin.call("GET", f"/api/channel/update_balance/{cid}")
        assert failed["success"] is False and "malformed" in failed["message"]
        assert (await m.Channel.get(id=cid)).balance == -10  # a failure keeps the last known balance

        # a vendor's own balance API (DeepSeek's, in yuan: converted at USDExchangeRate)
        await admin.set_option("USDExchangeRate", "8")
        fake.balances.deepseek = {"CNY": 80.0}
        deepseek = await admin.add_channel(base_url=fake.base_url, models="deepseek-chat", key=KEY, type=43)
        answer = await admin.call("GET", f"/api/channel/update_balance/{deepseek}")
        assert answer["success"] is True and answer["balance"] == 10.0
        assert fake.requests[-1]["path"] == "/user/balance" and (await m.Channel.get(id=deepseek)).balance == 10.0
        # types that cannot tell, multi-key channels, unknown channels
        anthropic = await admin.add_channel(base_url=fake.base_url, models="claude", key=KEY, type=14)
        failed = await admin.call("GET", f"/api/channel/update_balance/{anthropic}")
        assert failed == {"success": False, "message": "this channel type does not report a balance"}
        multi = await admin.ok("POST", "/api/channel/", json={"mode": "multi_to_single", "channel": {
            "type": 1, "key": f"{KEY}\nsk-two-0123456789", "base_url": fake.base_url, "models": "gpt-4o-mini"}})
        assert "multi-key" in (await admin.call("GET", f"/api/channel/update_balance/{multi}"))["message"]
        assert (await admin.call("GET", "/api/channel/update_balance/99999"))["success"] is False
        assert (await admin.call("GET", "/api/channel/update_balance/abc"))["success"] is False


async def test_balance_of_every_channel(gateway: GatewayServer, admin: AdminClient) -> None:
    async with FakeOpenAI() as rich, FakeOpenAI() as broke:
        broke.total_usage = 12000  # $120 of $120 spent
        ids = [await admin.add_channel(base_url=rich.base_url, models="gpt-4o-mini", name=f"r{i}") for i in range(5)]
        spent = await admin.add_channel(base_url=broke.base_url, models="gpt-4o-mini")
        await admin.add_channel(base_url=rich.base_url, models="claude", type=14)
        off = await admin.add_channel(base_url=rich.base_url, models="gpt-4o-mini", status=2)
        rich.push_fault(Fault("status", status=503))
        summary = await admin.ok("GET", "/api/channel/update_balance")
        assert summary == {"total": 7, "updated": 5, "failed": 1, "unsupported": 1, "disabled": 1}
        assert sorted([(await m.Channel.get(id=i)).balance for i in ids]) == [0] + [99.5] * 4
        assert (await m.Channel.get(id=off)).balance_updated_time == 0  # disabled channels are not asked
        row = await m.Channel.get(id=spent)
        assert row.balance == 0 and row.status == m.CHANNEL_AUTO_DISABLED  # used up: disabled, as new-api
        assert spent not in [c.id for lvl in gateway.gateway.snapshot.levels("default", "gpt-4o-mini") for c in lvl]


async def test_a_channel_tests_log_row_carries_the_ratios(gateway: GatewayServer, admin: AdminClient) -> None:
    """new-api's log view prints a consume row's price from its ratios (issue 28, item 8: a test
    row without them showed "$NaN"): the model's ratios, or its price per call, as the relay would
    charge the admin's group; the row itself costs nothing."""
    import json

    await admin.set_option("ModelRatio", {"gpt-4o-mini": 0.075})
    await admin.set_option("CompletionRatio", {"gpt-4o-mini": 4})
    await admin.set_option("CacheRatio", {"gpt-4o-mini": 0.25})
    await admin.set_option("ModelPrice", {"gpt-4o": 0.02})
    await admin.set_option("GroupRatio", {"default": 1.5})
    async with FakeOpenAI(key=KEY) as fake:
        cid = await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini,gpt-4o", key=KEY)
        for model in ("gpt-4o-mini", "gpt-4o"):
            answer = await admin.http.get(f"/api/channel/test/{cid}", params={"model": model},
                                          headers={"New-Api-User": str(admin.user_id)})
            assert answer.json()["success"] is True, answer.text
    rows = {r.model_name: r for r in await m.Log.filter(content="channel test")}
    ratio_row, price_row = json.loads(rows["gpt-4o-mini"].other), json.loads(rows["gpt-4o"].other)
    assert {k: ratio_row[k] for k in ("model_ratio", "completion_ratio", "group_ratio", "cache_ratio",
                                      "cache_tokens")} == {"model_ratio": 0.075, "completion_ratio": 4,
                                                           "group_ratio": 1.5, "cache_ratio": 0.25, "cache_tokens": 0}
    assert "model_price" not in ratio_row  # priced by tokens: the view reads no price
    assert (price_row["model_price"], price_row["group_ratio"]) == (0.02, 1.5)
    assert rows["gpt-4o"].quota == rows["gpt-4o-mini"].quota == 0


async def test_balances_refresh_by_themselves_once_per_cluster(make_gateway: object) -> None:
    """new-api's CHANNEL_UPDATE_FREQUENCY: every channel's balance is asked every so many minutes,
    by the worker holding the job's lease (faregate.db.cluster_jobs); off by default."""
    from faregate.db.cluster_jobs import KEY_PREFIX, LeaseState

    gw: GatewayServer = await make_gateway(  # type: ignore[operator]
        settings={"channel_update_frequency": 1, "job_lease_seconds": 0.3})
    admin = AdminClient(gw.base_url)
    try:
        await admin.setup_root()
        async with FakeOpenAI(key=KEY) as fake:
            cid = await admin.add_channel(base_url=fake.base_url, models="gpt-4o-mini", key=KEY)
            # the first round ran at the start, before the channel: a fresh cluster's runs at once
            await m.Option.filter(key=KEY_PREFIX + "channel_balances").delete()
            async with asyncio.timeout(60):
                while (await m.Channel.get(id=cid)).balance_updated_time == 0:
                    await asyncio.sleep(0.05)
            assert (await m.Channel.get(id=cid)).balance == 99.5
            lease = LeaseState.parse((await m.Option.get(key=KEY_PREFIX + "channel_balances")).value)
            assert lease.holder == gw.gateway.cluster_jobs.holder and lease.last_run > 0
    finally:
        await admin.close()


async def test_balances_are_not_refreshed_by_default(gateway: GatewayServer, admin: AdminClient) -> None:
    from faregate.db.cluster_jobs import KEY_PREFIX

    assert gateway.gateway.settings.channel_update_frequency == 0
    assert gateway.gateway.cluster_jobs.jobs["channel_balances"].period() is None
    assert not await m.Option.filter(key=KEY_PREFIX + "channel_balances").exists()
