"""Logs in new-api's shape: all / self with filters, stats, history deletion, and the
calling key's own logs and usage (issue 10, logs)."""

from __future__ import annotations

import time
from typing import Any

import httpx
import openai

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI

MSGS: Any = [{"role": "user", "content": "hello logs"}]


async def _traffic(gateway: GatewayServer, admin: AdminClient, fake: FakeOpenAI, n: int = 3) -> str:
    await admin.add_channel(base_url=fake.base_url, models="gpt-4o,gpt-4o-mini", name="main")
    key = await admin.add_token(name="alpha")
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    for i in range(n):
        await client.chat.completions.create(model="gpt-4o" if i else "gpt-4o-mini", messages=MSGS)
    await client.close()
    await gateway.gateway.ledger.flush()
    return key


async def test_all_logs_filter_and_page(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    await _traffic(gateway, admin, fake_openai)
    data = await admin.ok("GET", "/api/log/", params={"p": 1, "page_size": 2})
    assert (data["total"], len(data["items"]), data["page_size"]) == (3, 2, 2)
    row = data["items"][0]
    assert row["channel_name"] == "main" and row["type"] == m.LOG_CONSUME and row["token_name"] == "alpha"
    assert "admin_info" in row["other"]
    only = await admin.ok("GET", "/api/log/", params={"model_name": "gpt-4o-mini", "type": m.LOG_CONSUME})
    assert only["total"] == 1 and only["items"][0]["model_name"] == "gpt-4o-mini"
    future = await admin.ok("GET", "/api/log/", params={"start_timestamp": int(time.time()) + 3600})
    assert future["total"] == 0
    by_id = await admin.ok("GET", "/api/log/", params={"request_id": row["request_id"]})
    assert [r["id"] for r in by_id["items"]] == [row["id"]]
    bad = await admin.call("GET", "/api/log/", params={"type": "x"})
    assert bad["success"] is False and "type" in bad["message"]


async def test_stats(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    await _traffic(gateway, admin, fake_openai)
    rows = await m.Log.filter(type=m.LOG_CONSUME)
    figures = await admin.ok("GET", "/api/log/stat")
    assert figures["quota"] == sum(r.quota for r in rows) > 0
    assert figures["rpm"] == 3 and figures["tpm"] == sum(r.prompt_tokens + r.completion_tokens for r in rows)
    assert (await admin.ok("GET", "/api/log/self/stat"))["quota"] == figures["quota"]


async def test_self_logs_are_only_mine_and_hide_channels(gateway: GatewayServer, admin: AdminClient,
                                                         fake_openai: FakeOpenAI) -> None:
    await _traffic(gateway, admin, fake_openai, n=1)
    await admin.ok("POST", "/api/user/", json={"username": "carol", "password": ROOT_PASSWORD})
    carol = AdminClient(gateway.base_url)
    carol.user_id = (await carol.ok("POST", "/api/user/login",
                                    json={"username": "carol", "password": ROOT_PASSWORD}))["id"]
    assert (await carol.ok("GET", "/api/log/self"))["total"] == 0
    assert (await carol.call("GET", "/api/log/"))["success"] is False  # admins only
    mine = (await admin.ok("GET", "/api/log/self"))["items"][0]
    assert "channel" not in mine and "channel_name" not in mine and "admin_info" not in mine["other"]
    await carol.close()


async def test_delete_history(gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    await _traffic(gateway, admin, fake_openai)
    await m.Log.filter(model_name="gpt-4o-mini").update(created_at=1000)
    assert (await admin.call("DELETE", "/api/log/"))["success"] is False
    assert await admin.ok("DELETE", "/api/log/", params={"target_timestamp": 2000}) == 1
    assert await m.Log.all().count() == 2


async def test_the_key_reads_its_own_logs_and_usage(gateway: GatewayServer, admin: AdminClient,
                                                    fake_openai: FakeOpenAI) -> None:
    key = await _traffic(gateway, admin, fake_openai, n=2)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        logs = (await http.get("/api/log/token", headers={"Authorization": f"Bearer {key}"})).json()
        assert logs["success"] and len(logs["data"]) == 2 and "admin_info" not in logs["data"][0]["other"]
        usage = (await http.get("/api/usage/token", headers={"Authorization": f"Bearer {key}"})).json()
        assert usage["code"] is True and usage["data"]["object"] == "token_usage"
        assert usage["data"]["name"] == "alpha" and usage["data"]["total_used"] >= 0
        refused = await http.get("/api/log/token", headers={"Authorization": "Bearer sk-not-a-key"})
        assert refused.status_code == 401 and refused.json()["success"] is False


async def test_export_streams_csv_and_jsonl(gateway: GatewayServer, admin: AdminClient,
                                            fake_openai: FakeOpenAI) -> None:
    import csv
    import io
    import json

    from faregate.management import logs as logs_module

    await _traffic(gateway, admin, fake_openai, n=3)
    await m.Log.filter(id=1).update(token_name="=HYPERLINK(\"http://evil\")")
    logs_module.EXPORT_BATCH, old = 2, logs_module.EXPORT_BATCH  # several batches
    try:
        lines = (await admin.http.get("/api/log/export", params={"format": "jsonl"},
                                      headers={"New-Api-User": str(admin.user_id)})).text.splitlines()
        rows = [json.loads(line) for line in lines]
        assert [r["id"] for r in rows] == [3, 2, 1] and rows[0]["channel"] >= 1
        resp = await admin.http.get("/api/log/export", params={"format": "csv", "model_name": "gpt-4o"},
                                    headers={"New-Api-User": str(admin.user_id)})
        assert resp.headers["content-type"].startswith("text/csv")
        table = list(csv.DictReader(io.StringIO(resp.text)))
        assert [r["model_name"] for r in table] == ["gpt-4o", "gpt-4o"]
        mine = (await admin.http.get("/api/log/self/export", params={"format": "csv"},
                                     headers={"New-Api-User": str(admin.user_id)})).text
        assert "channel" not in mine.splitlines()[0] and "'=HYPERLINK" in mine
    finally:
        logs_module.EXPORT_BATCH = old


async def test_retention_runs_once_per_round_and_deletes_old_and_excess(gateway: GatewayServer,
                                                                        admin: AdminClient) -> None:
    import asyncio

    from faregate.db.cluster_jobs import JobLease
    from faregate.log_retention import apply_retention

    now = int(time.time())
    for i in range(10):
        await m.Log.create(user_id=1, type=m.LOG_CONSUME, created_at=now - (100 - i) * 86400 if i < 4 else now)
    workers = [JobLease("log_retention", f"worker-{i}", 30) for i in range(8)]
    claims = await asyncio.gather(*(w.claim_run(600, now=now) for w in workers))
    assert sum(claims) == 1, "one worker wins the round"
    holder = workers[claims.index(True)]
    other = workers[(claims.index(True) + 1) % len(workers)]
    assert await holder.finish(now=now)
    assert await holder.claim_run(600, now=now + 10) is False, "the round ran this period"
    assert await other.claim_run(600, now=now + 20) is False, "the holder's lease is still good"
    assert await other.claim_run(600, now=now + 601) is True, "the lease expired: another worker takes it over"
    assert await apply_retention(30, 0, now=now) == 4
    assert await apply_retention(0, 4, now=now) == 2
    assert [r.id for r in await m.Log.all().order_by("id")] == [7, 8, 9, 10]
    await admin.set_option("LogRetentionDays", 30)
    assert (await admin.call("PUT", "/api/option/", json={"key": "LogRetentionMaxRows", "value": "-1"}))[
        "success"] is False


async def _rows(n: int, **fields: Any) -> None:
    now = int(time.time())
    await m.Log.bulk_create([m.Log(user_id=1, type=m.LOG_CONSUME, created_at=now - n + i, model_name=f"m{i % 2}",
                                   **fields) for i in range(n)])


async def test_total_is_capped_and_a_pager_can_go_on(gateway: GatewayServer, admin: AdminClient,
                                                     monkeypatch: Any) -> None:
    from faregate.management import logs as logs_module

    monkeypatch.setattr(logs_module, "COUNT_CAP", 3)
    await _rows(10)

    async def page(p: int, size: int, **filters: Any) -> tuple[int, list[int]]:
        data = await admin.ok("GET", "/api/log/", params={"p": p, "page_size": size, **filters})
        return data["total"], [r["id"] for r in data["items"]]

    assert await page(1, 2) == (3, [10, 9])  # "at least 3": the cap
    assert await page(3, 2) == (7, [6, 5])  # past the cap: this page and one more row, so "next" shows
    assert await page(4, 3) == (10, [1])  # a short last page knows the exact total without counting
    assert await page(6, 2) == (10, [])  # past the end: counted (capped), then what the offset proves
    assert await page(1, 10, model_name="m1") == (5, [10, 8, 6, 4, 2])  # all on one page: exact
    assert (await admin.ok("GET", "/api/log/self", params={"page_size": 2}))["total"] == 3
    monkeypatch.setattr(logs_module, "COUNT_CAP", None)
    assert await page(1, 2) == (10, [10, 9])


async def test_lists_are_newest_first_by_time_then_id(gateway: GatewayServer, admin: AdminClient) -> None:
    now = int(time.time())
    # written out of time order (several workers' batches): the list follows the time
    await m.Log.bulk_create([m.Log(user_id=1, type=m.LOG_CONSUME, created_at=t) for t in
                             (now - 5, now - 1, now - 9, now - 1)])
    items = (await admin.ok("GET", "/api/log/"))["items"]
    assert [(r["created_at"], r["id"]) for r in items] == [(now - 1, 4), (now - 1, 2), (now - 5, 1), (now - 9, 3)]
    deep = await admin.ok("GET", "/api/log/", params={"p": 2, "page_size": 3})  # the index-only skip path
    assert [r["id"] for r in deep["items"]] == [3] and deep["items"][0]["created_at"] == now - 9
    ranged = await admin.ok("GET", "/api/log/", params={"start_timestamp": now - 6, "end_timestamp": now - 2})
    assert [r["id"] for r in ranged["items"]] == [1] and ranged["total"] == 1


async def test_log_routes_document_their_answers(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        paths = (await http.get("/api/openapi.json")).json()["paths"]
    for path, item in (("/api/log/", "AdminLogItem"), ("/api/log/self", "LogItem"), ("/api/log/stat", "Stat"),
                       ("/api/log/self/stat", "Stat"), ("/api/log/token", "LogItem"),
                       ("/api/usage/token", "TokenUsage")):
        assert item in str(paths[path]["get"]["responses"]["200"]), path
    assert "text/csv" in str(paths["/api/log/export"]["get"]["responses"]["200"])
