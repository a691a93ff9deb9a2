"""Requests that set no output bound cannot drive a wallet or a key below zero, also under
concurrency (issue 26, H1). The upstream here takes two seconds and bills 50,000 output tokens
per answer unless it was sent a smaller bound (as real providers honour ``max_tokens``): before
the fix, each request reserved 4,096 output tokens, nothing bounded the answer, and twenty
concurrent chats took a 40,000 balance to -410,090. Now every request's output bound is
reserved and sent upstream (the model's output limit when the client set none, lowered to what
the balance affords), so the balance ends at or above zero and the logs add up to what was
taken; on a two-worker gateway, on SQLite and on MariaDB, streamed and not. The same for the
responses of a realtime session: each ``response.create`` is paid for before it goes upstream,
with the model's bound when the client left it unlimited."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets

from faregate.testing.harness import AdminClient, GatewayProcess, GatewayServer
from faregate.testing.payments import user_session
from faregate_adapter_openai.testing import FakeOpenAI

MODEL = "overspend-model"  # ModelMaxOutputTokens does not name it: DefaultMaxTokensReserve (4,096) per answer
BALANCE = 40_000
ANSWER_TOKENS = 50_000
BURST = 20
CHAT = "/v1/chat/completions"


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def storage(request: pytest.FixtureRequest) -> dict[str, str]:
    """The gateway process's database: SQLite in its data dir, or a fresh MariaDB database."""
    return {} if request.param == "sqlite" else {"FAREGATE_DB_URL": request.getfixturevalue("mariadb_url")}


@pytest.fixture
async def upstream() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(latency=2.0, models=[MODEL]) as fake:
        fake.answer_tokens = ANSWER_TOKENS
        yield fake


@pytest.fixture
async def two_workers(storage: dict[str, str], tmp_path: Any) -> AsyncIterator[GatewayProcess]:
    proc = GatewayProcess(str(tmp_path / "gw"), workers=2, env=storage)
    await asyncio.to_thread(proc.start)
    try:
        yield proc
    finally:
        await asyncio.to_thread(proc.stop)


async def priced_channel(admin: AdminClient, upstream: FakeOpenAI) -> None:
    await admin.add_channel(base_url=upstream.base_url, models=MODEL)
    await admin.set_option("ModelRatio", {MODEL: 1})
    await admin.set_option("CompletionRatio", {MODEL: 1})


async def burst(base_url: str, key: str, body: dict[str, Any] | None = None) -> list[int]:
    """BURST chats at once, every other one streamed; their statuses."""
    body = body or {"model": MODEL, "messages": [{"role": "user", "content": "write me a long story"}]}

    async def one(http: httpx.AsyncClient, stream: bool) -> int:
        resp = await http.post(CHAT, json={**body, "stream": stream}, headers={"Authorization": f"Bearer {key}"})
        return resp.status_code

    limits = httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST)
    async with httpx.AsyncClient(base_url=base_url, timeout=120, limits=limits) as http:
        return list(await asyncio.gather(*(one(http, i % 2 == 1) for i in range(BURST))))


async def spent(admin: AdminClient, username: str) -> int:
    stat = await admin.ok("GET", "/api/log/stat", params={"type": 2, "username": username})
    return int(stat["quota"])


async def settled(read_balance: Any, admin: AdminClient, username: str, start: int) -> tuple[int, int]:
    """The balance and what the logs charged, once they add up to ``start`` (the last flush
    lands within moments of the last answer); the pair as read last when they never do."""
    balance, charged = 0, 0
    for _ in range(600):  # a minute at most, on a loaded machine
        balance, charged = await read_balance(), await spent(admin, username)
        if balance + charged == start:
            break
        await asyncio.sleep(0.1)
    return balance, charged


def bounds_sent(upstream: FakeOpenAI) -> list[Any]:
    return [r["json"].get("max_completion_tokens") for r in upstream.requests if r["path"] == CHAT]


async def test_unbounded_chats_cannot_overspend_a_wallet_or_a_key_on_two_workers(
        two_workers: GatewayProcess, upstream: FakeOpenAI) -> None:
    admin = AdminClient(two_workers.base_url)
    await admin.setup_root()
    await priced_channel(admin, upstream)

    # (a) a user with a 40,000 balance, an unlimited key
    wallet = await user_session(two_workers, admin, "wallet")
    await admin.ok("PUT", "/api/user/", json={"id": wallet.user_id, "quota": BALANCE})
    statuses = await burst(two_workers.base_url, await wallet.add_token(unlimited=True))

    async def wallet_balance() -> int:
        return int((await admin.ok("GET", f"/api/user/{wallet.user_id}"))["quota"])

    balance, charged = await settled(wallet_balance, admin, "wallet", BALANCE)
    assert balance >= 0, f"the wallet went to {balance}"
    assert balance + charged == BALANCE, (balance, charged)  # the ledger reconciles
    assert set(statuses) <= {200, 403} and 200 in statuses and 403 in statuses, statuses
    sent = bounds_sent(upstream)  # every answer went upstream with a bound its reservation covers
    assert len(sent) == statuses.count(200) and all(isinstance(b, int) and 16 <= b <= 4096 for b in sent), sent

    # (b) a key limited to 40,000 under a rich user
    upstream.requests.clear()
    rich = await user_session(two_workers, admin, "rich")
    await admin.ok("PUT", "/api/user/", json={"id": rich.user_id, "quota": 10**9})
    statuses = await burst(two_workers.base_url, await rich.add_token(remain_quota=BALANCE, name="limited"))

    async def key_balance() -> int:
        (key,) = (await rich.ok("GET", "/api/token/"))["items"]
        return int(key["remain_quota"])

    balance, charged = await settled(key_balance, admin, "rich", BALANCE)
    assert balance >= 0, f"the key went to {balance}"
    assert balance + charged == BALANCE, (balance, charged)
    assert set(statuses) <= {200, 403} and 200 in statuses and 403 in statuses, statuses
    sent = bounds_sent(upstream)
    assert len(sent) == statuses.count(200) and all(isinstance(b, int) and 16 <= b <= 4096 for b in sent), sent
    for client in (wallet, rich, admin):
        await client.close()


async def test_a_balance_short_of_the_models_limit_gets_a_shorter_bound_not_a_refusal(
        gateway: GatewayServer, admin: AdminClient, upstream: FakeOpenAI) -> None:
    """The model's output limit (100,000 here) is more than the balance covers: the request is
    admitted with the bound the balance affords, sent upstream, and the answer stops there
    (``length``); the next request, with nothing left, is the usual 403."""
    await priced_channel(admin, upstream)
    await admin.set_option("ModelMaxOutputTokens", {MODEL: 100_000})
    upstream.latency = 0
    key = await admin.add_token(remain_quota=BALANCE)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60) as http:
        headers = {"Authorization": f"Bearer {key}"}
        body = {"model": MODEL, "messages": [{"role": "user", "content": "write me a long story"}]}
        answer = await http.post(CHAT, json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["finish_reason"] == "length"
        (bound,) = bounds_sent(upstream)
        assert 16 <= bound < BALANCE  # what 40,000 covers beside the prompt's reservation
        assert answer.json()["usage"]["completion_tokens"] == bound
        refused = await http.post(CHAT, json=body, headers=headers)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "pre_consume_token_quota_failed"
    await gateway.gateway.ledger.flush(return_all=True)
    (token,) = (await admin.ok("GET", "/api/token/"))["items"]
    assert token["remain_quota"] >= 0


async def test_a_clients_own_bound_it_cannot_afford_is_refused_as_before(
        gateway: GatewayServer, admin: AdminClient, upstream: FakeOpenAI) -> None:
    await priced_channel(admin, upstream)
    key = await admin.add_token(remain_quota=BALANCE)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60) as http:
        resp = await http.post(CHAT, headers={"Authorization": f"Bearer {key}"}, json={
            "model": MODEL, "max_tokens": 50_000, "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 403
    error = resp.json()["error"]
    assert error["code"] == "pre_consume_token_quota_failed"
    # what it may cost against what the key covers ("hi" reserved at four times its 4 tokens)
    assert "may write up to 50000 output tokens and the quota covers 39984" in error["message"]
    assert not bounds_sent(upstream)


async def test_every_choice_of_n_is_reserved(gateway: GatewayServer, admin: AdminClient,
                                            upstream: FakeOpenAI) -> None:
    """``n`` choices may each use the whole bound: a key that covers one answer of 10,000
    tokens, not three, is refused ``n: 3``; before, the reservation ignored ``n``."""
    await priced_channel(admin, upstream)
    key = await admin.add_token(remain_quota=25_000)
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60) as http:
        resp = await http.post(CHAT, headers={"Authorization": f"Bearer {key}"}, json={
            "model": MODEL, "max_tokens": 10_000, "n": 3, "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 403
    assert not bounds_sent(upstream)


async def test_concurrent_response_creates_on_one_realtime_session_cannot_overspend_a_key(
        gateway: GatewayServer, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    """Twenty ``response.create`` at once on one session whose upstream writes 50,000 tokens a
    response unless bounded, on a key that covers three responses: only the three go upstream,
    under the model's bound (4,096, set on the session the client left at ``"inf"``); the
    fourth ends the session (403) and the key ends at or above zero. Before, every one went up
    unbounded and was reserved for only once it had started: those the quota could not cover
    ran on empty reservations until cancelled, and each wrote 50,000 tokens."""
    model = "gpt-realtime"
    await admin.add_channel(base_url=fake_openai.base_url, models=model)
    for option, value in (("ModelRatio", 2), ("CompletionRatio", 4), ("AudioRatio", 8), ("AudioCompletionRatio", 2)):
        await admin.set_option(option, {model: value})
    per_response = round(4096 * 8 * 2 * 2)  # the output bound as audio, the dearer: nothing said yet
    key = await admin.add_token(remain_quota=3 * per_response)
    fake_openai.realtime.output_tokens = ANSWER_TOKENS
    fake_openai.realtime.gate = asyncio.Event()  # every response holds after its first delta: all run at once
    url = gateway.base_url.replace("http://", "ws://") + f"/v1/realtime?model={model}"
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
        await ws.send(json.dumps({"type": "session.update", "session": {
            "type": "realtime", "output_modalities": ["text"], "max_output_tokens": "inf"}}))
        for _ in range(BURST):
            await ws.send(json.dumps({"type": "response.create"}))
        errors = []
        with contextlib.suppress(websockets.ConnectionClosed):
            async with asyncio.timeout(60):
                async for frame in ws:
                    event = json.loads(frame)
                    if event["type"] == "error":
                        errors.append(event["error"]["code"])
    (session,) = fake_openai.realtime.sessions
    async with asyncio.timeout(60):
        await session.closed.wait()
        while gateway.gateway.ledger.open_reservations:  # every response billed
            await asyncio.sleep(0.05)
    await gateway.gateway.ledger.flush(return_all=True)
    (token,) = (await admin.ok("GET", "/api/token/"))["items"]
    assert token["remain_quota"] >= 0, f"the key went to {token['remain_quota']}"
    assert token["remain_quota"] + token["used_quota"] == 3 * per_response
    assert errors == ["pre_consume_token_quota_failed"]
    creates = [e for e in session.events if e["type"] == "response.create"]
    assert len(creates) == 3  # only those paid for went
    (update,) = [e for e in session.events if e["type"] == "session.update"]
    assert update["session"]["max_output_tokens"] == 4096  # "inf" became the model's bound
