"""Quota warnings (issue 17): when a charge takes a user's remaining quota below their
threshold (their ``quota_warning_threshold``, else the ``QuotaRemindThreshold`` option), one
warning goes out the way their settings say (a webhook POST signed with their secret, as
new-api's; an email through the email plugin's SMTP), not one per request: not again until
the quota has risen above the threshold (a redeemed code) and fallen again. The relay never
waits for it: a webhook that takes seconds to answer delays no request."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from tortoise.queryset import ValuesQuery

from faregate import jsonutil
from faregate.billing.leases import lease_from_db, row_with_held
from faregate.billing.quota_warnings import QuotaWarnings, format_quota, warning
from faregate.db import models as m
from faregate.default_plugins.options import core_options
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI
from faregate_auth_email.testing import LocalSMTP

MODEL = "warned-model"
SECRET = "whsec-quota-warnings"


class Receiver:
    """A webhook endpoint on 127.0.0.1 that records every request (headers and body) and
    answers 200 after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.received.append((headers, body))
            await asyncio.sleep(self.delay)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def wait_for(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert len(self.received) >= count, f"{len(self.received)} webhook calls, expected {count}"


@pytest_asyncio.fixture
async def receiver() -> AsyncIterator[Receiver]:
    server = Receiver()
    await server.start()
    yield server
    await server.stop()


async def _setup(server: GatewayServer, admin: AdminClient, upstream: FakeOpenAI, *, quota: int) -> tuple[str, int]:
    await admin.add_channel(base_url=upstream.base_url, models=MODEL)
    await admin.set_option("ModelRatio", {MODEL: 100})
    await admin.set_option("CompletionRatio", {MODEL: 1})
    server.gateway.quota_warnings.interval = 0.05  # the check batches once per interval; keep the test quick
    key = await admin.add_token(unlimited=True)
    root = await m.User.get(username="root")
    await m.User.filter(id=root.id).update(quota=quota)
    await server.gateway.feed.publish("user", root.id)
    return key, root.id


async def _ask(server: GatewayServer, key: str) -> float:
    """One request; how long it took."""
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as http:
        resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": MODEL, "max_tokens": 5,
                                     "messages": [{"role": "user", "content": "hello there"}]})
    assert resp.status_code == 200, resp.text
    return time.perf_counter() - started


async def _settled(server: GatewayServer) -> None:
    """Every charge written and every warning check of it done."""
    await server.gateway.ledger.flush()
    for _ in range(100):
        task = server.gateway.quota_warnings._task
        if task is None or task.done():
            break
        await asyncio.sleep(0.02)


async def test_one_signed_webhook_per_crossing(make_gateway: Any, fake_openai: FakeOpenAI,
                                               receiver: Receiver) -> None:
    server = await make_gateway(settings={"notify_private_addresses": "allow"})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    key, root_id = await _setup(server, admin, fake_openai, quota=60_000)
    await admin.ok("PUT", "/api/user/setting", json={
        "notify_type": "webhook", "quota_warning_threshold": 50_000, "webhook_url": receiver.url,
        "webhook_secret": SECRET})
    per_request = 0
    while True:  # spend down to the threshold: no warning yet
        await _ask(server, key)
        await _settled(server)
        row = await m.Log.filter(type=m.LOG_CONSUME).order_by("-id").first()
        assert row is not None
        per_request = row.quota
        user = await row_with_held("user", root_id, "quota")
        assert user is not None
        if user["quota"] + user["held"] - per_request < 50_000:
            break
        assert receiver.received == []
    await _ask(server, key)  # this one crosses
    await _settled(server)
    await receiver.wait_for(1)
    for _ in range(3):  # below the threshold still: no second warning
        await _ask(server, key)
    await _settled(server)
    await asyncio.sleep(0.2)
    assert len(receiver.received) == 1
    headers, body = receiver.received[0]
    assert headers["content-type"] == "application/json"
    assert headers["x-webhook-signature"] == hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    payload = jsonutil.loads(body)
    assert payload["type"] == "quota_exceed" and payload["title"] == "Your quota is running low"
    assert payload["values"][0] == payload["title"] and payload["values"][1].startswith("$")
    assert payload["values"][1] in payload["content"] and abs(payload["timestamp"] - time.time()) < 60
    assert await m.QuotaWarning.filter(user_id=root_id).exists()
    # a redeemed code lifts the quota above the threshold: the warning re-arms ...
    (code,) = await admin.ok("POST", "/api/redemption/", json={"name": "refill", "quota": 200_000})
    await admin.ok("POST", "/api/user/topup", json={"key": code})
    await _settled(server)
    assert not await m.QuotaWarning.filter(user_id=root_id).exists()
    # ... and the next fall below warns again, once
    user = await row_with_held("user", root_id, "quota")
    assert user is not None
    await m.User.filter(id=root_id).update(quota=50_000 - user["held"])
    await _ask(server, key)
    await _settled(server)
    await receiver.wait_for(2)
    await _ask(server, key)
    await _settled(server)
    await asyncio.sleep(0.2)
    assert len(receiver.received) == 2
    await admin.close()


async def test_a_slow_webhook_never_delays_the_relay(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    slow = Receiver(delay=3.0)
    await slow.start()
    try:
        server = await make_gateway(settings={"notify_private_addresses": "allow"})
        admin = AdminClient(server.base_url)
        await admin.setup_root()
        key, _ = await _setup(server, admin, fake_openai, quota=1_000)  # below the threshold from the start
        await admin.ok("PUT", "/api/user/setting", json={
            "notify_type": "webhook", "quota_warning_threshold": 10**9, "webhook_url": slow.url})
        await admin.set_option("QuotaRemindThreshold", 0)
        await m.User.filter(username="root").update(quota=10**8)
        times = []
        for _ in range(5):
            times.append(await _ask(server, key))
            await asyncio.sleep(0.1)  # the warning is being sent meanwhile
        await slow.wait_for(1)
        assert max(times) < 1.5, times  # the webhook holds its answer for 3 s
        assert len(slow.received) == 1
        await admin.close()
    finally:
        await slow.stop()


async def test_email_warning_with_the_sites_threshold(make_gateway: Any, fake_openai: FakeOpenAI) -> None:
    """No settings of their own: new-api's default, email to the account's address, below
    ``QuotaRemindThreshold``; the amount shown as the site shows quota (CNY here)."""
    smtp = LocalSMTP()
    smtp.start()
    try:
        server = await make_gateway()
        admin = AdminClient(server.base_url)
        await admin.setup_root()
        await smtp.configure(admin)
        key, root_id = await _setup(server, admin, fake_openai, quota=27_000)  # 1,000 a request
        await m.User.filter(id=root_id).update(email="root@example.com", setting="")
        await admin.set_option("QuotaRemindThreshold", 25_000)
        await admin.set_option("general_setting.quota_display_type", "CNY")
        await admin.set_option("ServerAddress", "https://gate.example")
        for _ in range(4):
            await _ask(server, key)
        await _settled(server)
        message = await smtp.wait_for("root@example.com")
        assert message["Subject"] == "Your quota is running low"
        html = smtp.html(message)
        assert "\u00a5" in html and "https://gate.example/console/topup" in html
        await asyncio.sleep(0.2)
        assert len(smtp.messages) == 1
        await admin.close()
    finally:
        smtp.stop()


async def test_warnings_off_and_users_without_a_way(gateway: GatewayServer, admin: AdminClient,
                                                    fake_openai: FakeOpenAI) -> None:
    """``QuotaRemindThreshold`` 0 with no threshold of their own: never warned; a user whose
    notify_type has no notifier (bark, no plugin) is not marked warned."""
    key, root_id = await _setup(gateway, admin, fake_openai, quota=100_000)
    await admin.set_option("QuotaRemindThreshold", 0)
    await _ask(gateway, key)
    await _settled(gateway)
    assert not await m.QuotaWarning.all().exists()
    await admin.ok("PUT", "/api/user/setting", json={"notify_type": "bark", "quota_warning_threshold": 10**6,
                                                     "bark_url": "https://bark.example/key"})
    assert await gateway.gateway.quota_warnings.check([root_id]) == []
    assert not await m.QuotaWarning.all().exists()


async def test_a_completed_top_up_re_arms_the_warning(gateway: GatewayServer, admin: AdminClient) -> None:
    """A credit from a payment (here an admin completing a pending order) lifts the balance
    above the threshold: the sent warning is forgotten, so the next fall below warns again."""
    gateway.gateway.quota_warnings.interval = 0.05
    root = await m.User.get(username="root")
    await m.User.filter(id=root.id).update(quota=10)
    await m.QuotaWarning.create(user_id=root.id, remaining=10, threshold=1000, created_at=int(time.time()))
    await m.TopUp.create(user_id=root.id, amount=5, money=5, trade_no="ref_rearm", payment_provider="stripe",
                         currency="USD", quota=5 * 500_000, create_time=int(time.time()))
    await admin.ok("POST", "/api/user/topup/complete", json={"trade_no": "ref_rearm"})
    for _ in range(100):
        if not await m.QuotaWarning.filter(user_id=root.id).exists():
            break
        await asyncio.sleep(0.05)
    assert not await m.QuotaWarning.filter(user_id=root.id).exists()
    assert (await m.User.get(id=root.id)).quota == 10 + 5 * 500_000


def test_the_warning_shows_quota_as_the_site_does() -> None:
    """Every display type of ``format_quota`` (new-api's FormatQuota), from independent
    arithmetic: 1,234,567 quota at 500,000 a dollar is $2.469134."""
    quota = 1_234_567
    dollars = quota / 500_000

    def shown(**raw: str) -> str:
        return format_quota(quota, core_options(raw))

    assert shown() == f"${dollars:.6f}" == "$2.469134"
    assert shown(**{"general_setting.quota_display_type": "CNY", "USDExchangeRate": "7"}) == "\u00a517.283938"
    # TOKENS: the raw quota, no money at all
    assert shown(**{"general_setting.quota_display_type": "TOKENS", "QuotaPerUnit": "1000"}) == "1234567 quota"
    # CUSTOM: the custom symbol and rate (not the CNY one)
    custom = {"general_setting.quota_display_type": "CUSTOM", "USDExchangeRate": "7",
              "general_setting.custom_currency_exchange_rate": "150",
              "general_setting.custom_currency_symbol": "JP\u00a5"}
    assert shown(**custom) == "JP\u00a5370.370100"
    # an empty symbol falls back to the generic currency sign
    assert shown(**{**custom, "general_setting.custom_currency_symbol": ""}) == "\u00a4370.370100"
    # the quota per unit scales the money, whatever the currency
    assert shown(**{**custom, "QuotaPerUnit": "1000000"}) == "JP\u00a5185.185050"
    assert warning(quota, core_options({"general_setting.quota_display_type": "TOKENS"})).values[1] == "1234567 quota"


async def test_closing_ends_the_pause_between_checks() -> None:
    """The gateway's stop waits for the warnings' task: a close during the pause after a check
    ends the task then, not when the pause (``interval``) runs out."""
    checked: list[list[int]] = []

    async def check(user_ids: Any) -> list[int]:
        checked.append(list(user_ids))
        return []

    warnings = QuotaWarnings(lambda: core_options({}), {}, asyncio.ensure_future, interval=3600)
    warnings.check = check  # type: ignore[method-assign]
    warnings.charged([7])
    task = warnings._task
    assert task is not None
    while not checked:
        await asyncio.sleep(0)
    warnings.close()
    await asyncio.wait_for(task, 60)  # an hour's pause otherwise
    assert checked == [[7]]


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb),
                        pytest.param("postgres", marks=pytest.mark.postgres)])
def engine_url(request: pytest.FixtureRequest) -> str:
    """SQLite (the harness's own), or a fresh MariaDB / PostgreSQL database."""
    if request.param == "sqlite":
        return ""
    return str(request.getfixturevalue(f"{request.param}_url"))


async def test_a_lease_taken_during_the_check_warns_once(engine_url: str, make_gateway: Any,
                                                         receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 29: a lease moves quota from the balance into ``quota_leases`` in one transaction;
    a check that read the balance before it and the leases after it saw the money twice, took
    the warned user for recovered, re-armed the warning and warned them again. The lease is
    taken (by another worker) right after the check's read of the users table: the user
    stays warned, once."""
    server = await make_gateway(db_url=engine_url, settings={"notify_private_addresses": "allow"})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.ok("PUT", "/api/user/setting", json={
        "notify_type": "webhook", "quota_warning_threshold": 50_000, "webhook_url": receiver.url,
        "webhook_secret": SECRET})
    root = await m.User.get(username="root")
    await m.User.filter(id=root.id).update(quota=40_000)  # below the threshold
    warnings = server.gateway.quota_warnings
    assert await warnings.check([root.id]) == [root.id]
    await receiver.wait_for(1)

    other = "another-worker"  # a live worker of another machine (the sweeper leaves it be)
    await m.Worker.create(id=other, heartbeat=int(time.time()))
    original = ValuesQuery._execute
    leased: list[int] = []

    async def then_a_lease(query: ValuesQuery[Any]) -> Any:
        rows = await original(query)
        if query.model is m.User and not leased:  # 30,000 of the 40,000 leased: 70,000 if counted twice
            leased.append(await lease_from_db(other, "user", root.id, 30_000, 0))
        return rows

    monkeypatch.setattr(ValuesQuery, "_execute", then_a_lease)
    assert await warnings.check([root.id]) == []
    monkeypatch.undo()
    assert leased == [30_000]
    assert (await m.User.get(id=root.id)).quota == 10_000
    assert await warnings.check([root.id]) == []  # still warned: not a second time
    await asyncio.sleep(0.2)
    assert len(receiver.received) == 1
    assert await m.QuotaWarning.filter(user_id=root.id).count() == 1
    await admin.close()
