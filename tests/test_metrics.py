"""Prometheus metrics at ``GET /metrics`` (docs/metrics.md): what one chat through the
OpenAI SDK adds (matching its log row), a refused request, the live gauges during a
stream, the token protection, ``metrics_enabled=false``, and ``serve --workers 2``
summing every worker in one scrape."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from faregate import __version__
from faregate.db import models as m
from faregate.observe import metrics
from faregate.plugins import load_plugins
from faregate.supervisor import METRICS_DIR_ENV, metrics_process_dead, prepare_metrics_dir
from faregate.testing.harness import AdminClient, GatewayProcess, GatewayServer
from faregate_adapter_openai.testing import Fault

ADAPTER = "faregate-adapter-openai"
MODEL = "gpt-4o-mini"
CHAT = "/v1/chat/completions"
HI = [{"role": "user", "content": "hi"}]


# ---- reading an exposition ---------------------------------------------------------------


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of the text format, by name and labels (the official parser)."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


# ---- an in-process gateway with the OpenAI adapter and one channel on fake_openai ------------


@dataclass
class Served:
    server: GatewayServer
    client: openai.AsyncOpenAI
    http: httpx.AsyncClient
    channel: int
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    @property
    def gw(self) -> Any:
        return self.server.gateway

    async def chat(self, model: str = MODEL, **kwargs: Any) -> Any:
        return await self.client.chat.completions.create(model=model, messages=HI, **kwargs)

    async def scrape(self, token: str | None = None) -> Samples:
        resp = await self.get_metrics(token)
        assert resp.status_code == 200, resp.text
        return parse(resp.text)

    async def get_metrics(self, token: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.http.get("/metrics", headers=headers)


@pytest_asyncio.fixture
async def serve(make_gateway: Any, fake_openai: Any) -> AsyncIterator[Callable[..., Any]]:
    served: list[Served] = []

    async def factory(**settings: Any) -> Served:
        server = await make_gateway(plugins=load_plugins(allow=[ADAPTER]), settings=settings or None)
        admin = AdminClient(server.base_url)
        await admin.setup_root()
        channel = await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},gpt-4o")
        key = await admin.add_token(remain_quota=5_000_000, name="metrics")
        client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)
        http = httpx.AsyncClient(base_url=server.base_url, timeout=30)
        one = Served(server, client, http, channel, [admin.close, client.close, http.aclose])
        served.append(one)
        return one

    yield factory
    for one in served:
        for close in one.closers:
            await close()
        await one.gw.ledger.flush()  # the ledger's flush is idle when the gateway stops (see test_hooks)


# ---- in process ------------------------------------------------------------------------------


async def test_a_chat_is_counted_as_its_log_row_says(serve: Callable[..., Any]) -> None:
    s = await serve()
    await s.chat()
    await s.gw.ledger.flush()
    (row,) = await m.Log.filter(type=m.LOG_CONSUME)
    assert row.prompt_tokens and row.completion_tokens and row.quota
    got = await s.scrape()
    channel = str(s.channel)
    assert value(got, "faregate_requests_total", route=CHAT, model=MODEL, channel=channel, status="200") == 1
    assert total(got, "faregate_requests_total") == 1
    assert value(got, "faregate_tokens_total", model=MODEL, direction="input") == row.prompt_tokens
    assert value(got, "faregate_tokens_total", model=MODEL, direction="output") == row.completion_tokens
    assert value(got, "faregate_quota_charged_total", model=MODEL) == row.quota
    assert value(got, "faregate_overhead_seconds_count", route=CHAT) == 1
    assert value(got, "faregate_overhead_seconds_bucket", route=CHAT, le="+Inf") == 1
    assert value(got, "faregate_request_duration_seconds_count", route=CHAT) == 1
    overhead = value(got, "faregate_overhead_seconds_sum", route=CHAT)
    duration = value(got, "faregate_request_duration_seconds_sum", route=CHAT)
    assert overhead is not None and duration is not None and 0 <= overhead <= duration
    assert value(got, "faregate_upstream_attempts_total", channel=channel) == 1
    assert value(got, "faregate_failovers_total", model=MODEL) == 0
    assert value(got, "faregate_info", version=__version__, node_type="master") == 1
    # settled and flushed: nothing is held or queued; SQLite's one connection is open
    assert value(got, "faregate_open_reservations") == 0
    assert value(got, "faregate_reserved_quota") == 0
    assert value(got, "faregate_active_streams") == 0
    assert value(got, "faregate_log_queue_depth") == 0
    assert value(got, "faregate_db_pool_connections", state="open") == 1

    await s.chat()  # the same series, counted again
    got = await s.scrape()
    assert value(got, "faregate_requests_total", route=CHAT, model=MODEL, channel=channel, status="200") == 2
    assert value(got, "faregate_overhead_seconds_count", route=CHAT) == 2


async def test_the_scrape_is_prometheus_text_and_not_a_request(serve: Callable[..., Any]) -> None:
    s = await serve()
    for _ in range(3):
        resp = await s.get_metrics()
        assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f.type for f in text_string_to_metric_families(resp.text)}
    assert families["faregate_requests"] == "counter" and families["faregate_overhead_seconds"] == "histogram"
    assert families["faregate_active_streams"] == "gauge" and families["faregate_info"] == "gauge"
    assert all(name.startswith("faregate_") for name in families)  # this gateway's registry, not the global one
    assert total(parse(resp.text), "faregate_requests_total") == 0  # scrapes are no relayed requests


async def test_a_refused_request_is_counted_with_its_status(serve: Callable[..., Any]) -> None:
    s = await serve()
    statuses = []
    for model in ("no-such-model", "another-typo"):
        with pytest.raises(openai.APIStatusError) as refused:
            await s.chat(model=model)
        statuses.append(refused.value.status_code)
    assert statuses[0] == statuses[1] and statuses[0] >= 400
    got = await s.scrape()
    # unknown models share one series: a client cannot grow the label set
    assert value(got, "faregate_requests_total", route=CHAT, model="other", channel="none",
                 status=str(statuses[0])) == 2
    assert not [ls for (n, ls) in got if n == "faregate_requests_total" and ("model", "no-such-model") in ls]
    assert total(got, "faregate_upstream_attempts_total") == 0  # no attempt made
    assert total(got, "faregate_quota_charged_total") == 0
    bad_key = openai.AsyncOpenAI(base_url=s.server.base_url + "/v1", api_key="sk-wrong", max_retries=0)
    s.closers.append(bad_key.close)
    with pytest.raises(openai.AuthenticationError):
        await bad_key.chat.completions.create(model=MODEL, messages=HI)
    got = await s.scrape()
    assert value(got, "faregate_requests_total", route=CHAT, model="none", channel="none", status="401") == 1


async def test_failovers_are_counted(serve: Callable[..., Any], fake_openai: Any) -> None:
    s = await serve()
    admin = AdminClient(s.server.base_url)
    s.closers.append(admin.close)
    await admin.setup_root()
    await admin.set_option("RetryTimes", 1)
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, name="second")
    fake_openai.fail_next(500, "upstream exploded")
    await s.chat()
    got = await s.scrape()
    assert value(got, "faregate_failovers_total", model=MODEL) == 1
    assert total(got, "faregate_upstream_attempts_total") == 2
    assert total(got, "faregate_requests_total", status="200") == 1


async def test_live_gauges_during_a_stream(serve: Callable[..., Any], fake_openai: Any) -> None:
    s = await serve()
    fake_openai.push_fault(Fault("stall", after_chunks=2, delay=1.5))  # holds the stream open
    stream = await s.chat(stream=True, stream_options={"include_usage": True})
    chunks = stream.__aiter__()
    await chunks.__anext__()
    during = await s.scrape()
    assert value(during, "faregate_active_streams") == 1
    assert value(during, "faregate_open_reservations") == 1
    reserved = value(during, "faregate_reserved_quota")
    assert reserved is not None and reserved > 0
    async for _ in chunks:
        pass
    for _ in range(50):  # the server's end of the stream settles right after its last chunk
        after = await s.scrape()
        if value(after, "faregate_active_streams") == 0:
            break
        await asyncio.sleep(0.02)
    assert value(after, "faregate_active_streams") == 0
    assert value(after, "faregate_open_reservations") == 0 and value(after, "faregate_reserved_quota") == 0
    assert value(after, "faregate_requests_total", route=CHAT, model=MODEL, channel=str(s.channel),
                 status="200") == 1


async def test_a_token_protects_the_metrics(serve: Callable[..., Any]) -> None:
    s = await serve(metrics_token="scrape-secret-123")
    assert (await s.get_metrics()).status_code == 401
    assert (await s.get_metrics("wrong-token")).status_code == 401
    basic = await s.http.get("/metrics", headers={"Authorization": "Basic scrape-secret-123"})
    assert basic.status_code == 401
    await s.chat()
    got = await s.scrape("scrape-secret-123")
    assert total(got, "faregate_requests_total", status="200") == 1


async def test_disabled_metrics_are_not_served_nor_observed(serve: Callable[..., Any]) -> None:
    from faregate.observe.request_log import log_request

    s = await serve(metrics_enabled=False)
    assert (await s.get_metrics()).status_code == 404
    assert s.gw.observers == [log_request]  # no metrics observer on the hot path
    await s.chat()  # and relaying works without it


async def test_gateways_in_one_process_keep_their_own_counts(serve: Callable[..., Any], tmp_path: Path) -> None:
    from faregate.gateway import Gateway
    from faregate.observe.metrics import Metrics

    s = await serve()
    await s.chat()
    # a second gateway's metrics (its own registry: no clash with the first's names)
    other = Metrics(Gateway(load_plugins(allow=[ADAPTER]), {"data_dir": str(tmp_path / "other")}))
    assert total(parse(other.exposition().decode()), "faregate_requests_total") == 0
    assert total(await s.scrape(), "faregate_requests_total") == 1


# ---- the supervisor's metrics directory ------------------------------------------------------


def test_the_supervisor_prepares_the_metrics_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    operators = tmp_path / "prom"
    operators.mkdir()
    (operators / "counter_4242.db").write_bytes(b"stale")
    (operators / "keep.txt").write_text("not ours")
    monkeypatch.setenv(METRICS_DIR_ENV, str(operators))
    assert prepare_metrics_dir() == (str(operators), False)
    assert sorted(os.listdir(operators)) == ["keep.txt"]  # last run's metric files are gone

    monkeypatch.delenv(METRICS_DIR_ENV)
    path, made = prepare_metrics_dir()
    try:
        assert made and os.environ[METRICS_DIR_ENV] == path and os.listdir(path) == []
        for name in ("gauge_livesum_4242.db", "counter_4242.db", "gauge_livesum_4343.db"):
            Path(path, name).write_bytes(b"")
        metrics_process_dead(path, 4242)  # its live gauges go, its counters stay in the sums
        assert sorted(os.listdir(path)) == ["counter_4242.db", "gauge_livesum_4343.db"]
    finally:
        os.environ.pop(METRICS_DIR_ENV, None)
        for name in os.listdir(path):
            os.remove(os.path.join(path, name))
        os.rmdir(path)


# ---- serve --workers 2 -----------------------------------------------------------------------


def _lease_workers(data_dir: str, token_id: int) -> set[str]:
    """Workers holding a quota lease on the token, i.e. that served it lately."""
    with sqlite3.connect(f"file:{os.path.join(data_dir, 'faregate.db')}?mode=ro", uri=True, timeout=10) as db:
        rows = db.execute("SELECT DISTINCT worker FROM quota_leases WHERE kind = 'token' AND ref_id = ?",
                          (token_id,)).fetchall()
    return {r[0] for r in rows}


async def test_every_worker_is_summed_in_one_scrape(tmp_path: Path, fake_openai: Any) -> None:
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2)
    await asyncio.to_thread(proc.start)
    admin = AdminClient(proc.base_url)
    clients: list[openai.AsyncOpenAI] = []
    try:
        await admin.setup_root()
        await admin.add_channel(base_url=fake_openai.base_url, models=MODEL)
        sent = 0
        for attempt in range(6):  # the kernel spreads new connections; retry until both workers served
            token = await admin.ok("POST", "/api/token/", json={"name": f"burst{attempt}", "remain_quota": 5_000_000,
                                                                 "expired_time": -1})
            key = "sk-" + (await admin.ok("POST", f"/api/token/{token['id']}/key"))["key"]
            # each client its own connection, made ahead so the burst goes out at once
            burst = [openai.AsyncOpenAI(base_url=proc.base_url + "/v1", api_key=key, max_retries=0,
                                        http_client=openai.DefaultAsyncHttpxClient(timeout=30)) for _ in range(12)]
            clients += burst
            await asyncio.gather(*(c.chat.completions.create(model=MODEL, messages=HI) for c in burst))
            sent += len(burst)
            if len(_lease_workers(proc.env["FAREGATE_DATA_DIR"], token["id"])) == 2:
                break
        else:
            pytest.skip("the kernel sent every connection to one worker")
        # each worker hands its counts to the shared files every second (and before its own
        # scrapes): within that, any worker answers the scrape (a new connection each time) with the sum
        await asyncio.sleep(metrics.LIVE_REFRESH_SECONDS + 0.5)
        for _ in range(4):
            resp = await asyncio.to_thread(httpx.get, proc.base_url + "/metrics", timeout=10)
            assert resp.status_code == 200
            got = parse(resp.text)
            assert value(got, "faregate_requests_total", route=CHAT, model=MODEL, channel="1", status="200") == sent
            assert value(got, "faregate_overhead_seconds_count", route=CHAT) == sent
            assert value(got, "faregate_info", version=__version__, node_type="master") == 1
        # the live gauges are each worker's own, summed: SQLite has one connection per worker
        for _ in range(50):
            got = parse((await asyncio.to_thread(httpx.get, proc.base_url + "/metrics", timeout=10)).text)
            if value(got, "faregate_db_pool_connections", state="open") == 2:
                break
            await asyncio.sleep(0.1)
        assert value(got, "faregate_db_pool_connections", state="open") == 2
    finally:
        for client in clients:
            await client.close()
        await admin.close()
        await asyncio.to_thread(proc.stop)
