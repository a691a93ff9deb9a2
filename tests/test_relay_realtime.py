"""``GET /v1/realtime`` through the gateway, with the official ``openai`` SDK's realtime client
(``client.realtime.connect()``, the GA protocol) and a raw WebSocket client (a browser's key
in a subprotocol) against the fake OpenAI's realtime server: frames relayed both ways and
checked against OpenAI's published event schemas, every response billed on its
``response.done`` usage (text and audio at their ratios) in a row of its own, the session
reported once; refused before the upgrade with the HTTP error (bad key, no realtime channel,
no quota); cut off with a realtime ``error`` event when the quota runs out, the upstream
drops, the session idles or lasts too long; a client that leaves mid-response billed on the
usage the upstream reports for the cancelled response."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
import websockets

from faregate import jsonutil
from faregate.db import models as m
from faregate.testing.harness import AdminClient
from faregate_adapter_openai.realtime.session import PARSE_LIMIT
from faregate_adapter_openai.testing import FakeOpenAI, Fault
from faregate_adapter_openai.testing.realtime import REPLY_TEXT, reply_audio
from faregate_adapter_openai.testing.schema import request_errors, validate_error

MODEL = "gpt-realtime"
QPU = 500_000
#: gpt-realtime's list prices as ratios: $4 text in, $0.40 cached, $16 text out, $32 audio in,
#: $64 audio out (AudioCompletionRatio 2 is built in for it) per million tokens
RATIO, COMPLETION, CACHE, AUDIO = 2.0, 4.0, 0.1, 8.0
RESERVE_OUT = 4096  # gpt-realtime's output limit (ModelMaxOutputTokens), set on every response
#: one response's reservation after the user said "hi": its output bound as audio, and "hi" at a
#: token per byte (four times the estimate)
ONE_RESPONSE = round((4 + RESERVE_OUT * AUDIO * 2) * RATIO)
UPSTREAM_KEY = "sk-upstream-realtime-channel-key-0123456789"
TEXT_SESSION = {"type": "realtime", "output_modalities": ["text"]}


def user_text(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def quota_of(usage: dict[str, Any]) -> int:
    """new-api's realtime formula on a response.done usage."""
    inputs, outputs = usage["input_token_details"], usage["output_token_details"]
    cached = inputs["cached_tokens"]
    cached_audio = inputs["cached_tokens_details"]["audio_tokens"]
    audio_in = inputs["audio_tokens"] - cached_audio
    text_in = usage["input_tokens"] - cached - audio_in
    weighted = (text_in + audio_in * AUDIO + cached * CACHE + outputs["text_tokens"] * COMPLETION
                + outputs["audio_tokens"] * AUDIO * 2)
    return max(1, round(weighted * RATIO))


async def prices(admin: AdminClient) -> None:
    await admin.set_option("ModelRatio", {MODEL: RATIO, "my-realtime": RATIO})
    await admin.set_option("CompletionRatio", {MODEL: COMPLETION, "my-realtime": COMPLETION})
    await admin.set_option("CacheRatio", {MODEL: CACHE, "my-realtime": CACHE})
    await admin.set_option("AudioRatio", {MODEL: AUDIO, "my-realtime": AUDIO})
    await admin.set_option("AudioCompletionRatio", {MODEL: 2, "my-realtime": 2})  # the whole table


@pytest.fixture
async def key(gateway: Any, admin: AdminClient, fake_openai: FakeOpenAI) -> str:
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},my-realtime", key=UPSTREAM_KEY,
                            model_mapping='{"my-realtime": "gpt-realtime"}')
    await prices(admin)
    token: str = await admin.add_token(remain_quota=50 * QPU)
    return token


@pytest.fixture
def reports(gateway: Any) -> list[Any]:
    """Every exchange report (the request log line's source) of the gateway."""
    seen: list[Any] = []
    gateway.gateway.observers.append(seen.append)
    return seen


@pytest.fixture
async def sdk(gateway: Any, key: str) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    yield client
    await client.close()


def ws_url(gateway: Any, model: str = MODEL) -> str:
    return gateway.base_url.replace("http://", "ws://") + f"/v1/realtime?model={model}"


async def consume_rows(gateway: Any) -> list[m.Log]:
    await gateway.gateway.ledger.flush()
    return list(await m.Log.filter(type=m.LOG_CONSUME).order_by("id"))


def other(row: m.Log) -> dict[str, Any]:
    value: dict[str, Any] = jsonutil.loads(row.other)
    return value


async def wait_for(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    async with asyncio.timeout(timeout):
        while not (result := await check()):
            await asyncio.sleep(0.02)
    return result


def server_event(raw: bytes | str) -> dict[str, Any]:
    """A frame the client got, checked against the spec's ``RealtimeServerEvent``."""
    event: dict[str, Any] = json.loads(raw)
    problem = request_errors(event, "RealtimeServerEvent")
    assert problem is None, f"{event.get('type')}: {problem}"
    return event


async def until(conn: Any, kind: str) -> list[dict[str, Any]]:
    """The SDK connection's events (raw, schema-checked) up to and including one of ``kind``."""
    seen = []
    async with asyncio.timeout(10):
        while True:
            event = server_event(await conn.recv_bytes())
            seen.append(event)
            if event["type"] == kind:
                return seen


async def raw_until(ws: Any, kind: str) -> list[dict[str, Any]]:
    seen = []
    async with asyncio.timeout(10):
        while True:
            event = server_event(await ws.recv())
            seen.append(event)
            if event["type"] == kind:
                return seen


# ---- a conversation -------------------------------------------------------------------------
async def test_a_text_conversation_with_the_sdk_is_relayed_and_billed_per_response(
        sdk: openai.AsyncOpenAI, gateway: Any, fake_openai: FakeOpenAI, reports: list[Any]) -> None:
    async with sdk.realtime.connect(model=MODEL) as conn:
        (created,) = await until(conn, "session.created")
        assert created["session"]["model"] == MODEL
        await conn.session.update(session=TEXT_SESSION)
        await until(conn, "session.updated")
        done = []
        for text in ("Hello there!", "And once more."):
            await conn.conversation.item.create(item=user_text(text))
            await conn.response.create()
            events = await until(conn, "response.done")
            said = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
            assert said == REPLY_TEXT
            done.append(events[-1]["response"])
    # the client's events reached the upstream unchanged, with the channel's key
    (session,) = fake_openai.realtime.sessions
    await asyncio.wait_for(session.closed.wait(), 5)
    assert [e["type"] for e in session.events] == ["session.update", "conversation.item.create", "response.create",
                                                   "conversation.item.create", "response.create"]
    assert session.events[1]["item"]["content"][0]["text"] == "Hello there!"
    assert session.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert "openai-beta" not in session.headers  # the GA protocol, as the SDK speaks it
    assert session.query == {"model": MODEL}
    # one consume row per response, each at new-api's realtime price of its own usage
    rows = await wait_for(lambda: _rows(gateway, 2))
    for row, response in zip(rows, done, strict=True):
        usage = response["usage"]
        assert (row.model_name, row.prompt_tokens, row.completion_tokens) == (
            MODEL, usage["input_tokens"], usage["output_tokens"])
        assert row.quota == quota_of(usage) and row.is_stream
        details = other(row)
        assert details["realtime"] is True and details["response_id"] == response["id"]
        assert details["usage_source"] == "upstream" and details["end_reason"] == "done"
    assert done[1]["usage"]["input_token_details"]["cached_tokens"] > 0  # the second turn read the first
    # the session is reported once, with its totals and how it ended
    (report,) = [r for r in reports if r.kind == "realtime"]
    assert (report.end_reason, report.status, report.route) == ("client_closed", 200, "/v1/realtime")
    assert report.quota == sum(r.quota for r in rows)
    assert report.input_tokens == sum(r.prompt_tokens for r in rows)


async def _rows(gateway: Any, count: int) -> list[m.Log] | None:
    rows = await consume_rows(gateway)
    return rows if len(rows) >= count else None


async def test_audio_deltas_reach_the_client_and_audio_is_billed_at_its_ratios(
        sdk: openai.AsyncOpenAI, gateway: Any, fake_openai: FakeOpenAI) -> None:
    pcm = reply_audio()
    async with sdk.realtime.connect(model="my-realtime") as conn:
        await until(conn, "session.created")
        await conn.input_audio_buffer.append(audio=base64.b64encode(pcm).decode())
        await conn.input_audio_buffer.commit()
        await conn.response.create()  # the session's default output: audio with a transcript
        events = await until(conn, "response.done")
    audio = b"".join(base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta")
    assert audio == pcm
    transcript = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert transcript == REPLY_TEXT
    usage = events[-1]["response"]["usage"]
    assert usage["input_token_details"]["audio_tokens"] and usage["output_token_details"]["audio_tokens"]
    (row,) = await wait_for(lambda: _rows(gateway, 1))
    assert row.model_name == "my-realtime" and row.quota == quota_of(usage)
    details = other(row)
    assert details["audio_output_tokens"] == usage["output_token_details"]["audio_tokens"]
    assert (details["audio_ratio"], details["audio_completion_ratio"]) == (AUDIO, 2)
    assert details["upstream_model_name"] == MODEL  # the channel's mapping
    assert fake_openai.realtime.sessions[0].query == {"model": MODEL}


async def test_the_sdk_with_the_key_as_a_subprotocol(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    """The subprotocol's key is the one that counts (new-api's rule), whatever the header says."""
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key="sk-not-the-key", max_retries=0)
    options: Any = {"subprotocols": ["realtime", f"openai-insecure-api-key.{key}"]}
    async with client.realtime.connect(model=MODEL, websocket_connection_options=options) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("hi"))
        await conn.response.create()
        events = await until(conn, "response.done")
    await client.close()
    assert events[-1]["response"]["status"] == "completed"
    (row,) = await wait_for(lambda: _rows(gateway, 1))
    assert row.quota == quota_of(events[-1]["response"]["usage"])
    assert fake_openai.realtime.sessions[0].headers["authorization"] == f"Bearer {UPSTREAM_KEY}"


async def test_the_key_as_a_subprotocol_and_the_beta_protocol(gateway: Any, key: str,
                                                             fake_openai: FakeOpenAI) -> None:
    """A browser cannot set headers: its key comes as ``openai-insecure-api-key.<key>``; the
    gateway answers ``realtime`` and never echoes the key; a beta client's protocol is asked of
    the upstream."""
    protocols = ["realtime", f"openai-insecure-api-key.{key}", "openai-beta.realtime-v1"]
    async with websockets.connect(ws_url(gateway), subprotocols=protocols) as ws:  # type: ignore[arg-type]
        assert ws.subprotocol == "realtime"
        assert key not in str(ws.response.headers)
        await raw_until(ws, "session.created")
    (session,) = fake_openai.realtime.sessions
    assert session.headers["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert session.headers["openai-beta"] == "realtime=v1"
    assert key not in json.dumps(session.headers)


# ---- refused before the upgrade -----------------------------------------------------------
@pytest.mark.parametrize("form", ["header", "subprotocol"])
async def test_a_bad_key_is_refused_before_the_upgrade(gateway: Any, key: str, fake_openai: FakeOpenAI,
                                                       form: str) -> None:
    wrong = "sk-" + "x" * 48
    options: dict[str, Any] = ({"additional_headers": {"Authorization": f"Bearer {wrong}"}} if form == "header"
                               else {"subprotocols": ["realtime", f"openai-insecure-api-key.{wrong}"]})
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(ws_url(gateway), **options):
            pass
    response = refused.value.response
    assert response.status_code == 401
    validate_error(json.loads(response.body))
    assert not fake_openai.realtime.sessions


async def test_the_sdk_sees_the_refusal(gateway: Any, key: str) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key="sk-wrong", max_retries=0)
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with client.realtime.connect(model=MODEL):
            pass
    assert refused.value.response.status_code == 401
    await client.close()


async def test_a_model_no_realtime_channel_serves_is_refused_before_the_upgrade(
        gateway: Any, admin: AdminClient, key: str, fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="deepseek-chat", type=43, name="deepseek")
    await admin.set_option("ModelRatio", {"deepseek-chat": 0.5})
    headers = {"Authorization": f"Bearer {key}"}
    for model, status, code in (("deepseek-chat", 400, "endpoint_not_supported"), ("nothing-here", 404,
                                                                                    "model_not_found")):
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(ws_url(gateway, model), additional_headers=headers):
                pass
        body = json.loads(refused.value.response.body)
        assert (refused.value.response.status_code, body["error"]["code"]) == (status, code)
    with pytest.raises(websockets.InvalidStatus) as refused:  # no model at all
        async with websockets.connect(ws_url(gateway).split("?")[0], additional_headers=headers):
            pass
    assert json.loads(refused.value.response.body)["error"]["param"] == "model"
    assert not fake_openai.realtime.sessions
    await gateway.gateway.ledger.flush()
    assert not await m.Log.filter(type=m.LOG_CONSUME).count()


async def test_a_quota_too_small_for_one_response_is_refused_before_the_upgrade(
        gateway: Any, admin: AdminClient, key: str, fake_openai: FakeOpenAI) -> None:
    poor = await admin.add_token(remain_quota=1000)
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(ws_url(gateway), additional_headers={"Authorization": f"Bearer {poor}"}):
            pass
    assert refused.value.response.status_code == 403
    assert json.loads(refused.value.response.body)["error"]["code"] == "pre_consume_token_quota_failed"
    assert not fake_openai.realtime.sessions


# ---- cut off mid-session ------------------------------------------------------------------
async def test_the_session_ends_with_an_error_event_when_the_quota_runs_out(
        gateway: Any, admin: AdminClient, fake_openai: FakeOpenAI, reports: list[Any]) -> None:
    """The token holds exactly one response's reservation (its whole output budget as audio):
    the first response is served and billed, the next cannot be reserved, so the client gets
    ``response.done``, then the error event, then the close; no balance goes below zero."""
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, key=UPSTREAM_KEY)
    await prices(admin)
    first_reservation = ONE_RESPONSE
    token = await admin.add_token(remain_quota=first_reservation)
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    async with client.realtime.connect(model=MODEL) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("hi"))
        await conn.response.create()
        events = await until(conn, "response.done")
        (error,) = await until(conn, "error")
        assert error["error"]["code"] == "pre_consume_token_quota_failed"
        assert error["event_id"].startswith("evt_")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await conn.recv_bytes()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    await client.close()
    (row,) = await wait_for(lambda: _rows(gateway, 1))
    assert row.quota == quota_of(events[-1]["response"]["usage"])
    await wait_for(lambda: _closed(fake_openai))
    await gateway.gateway.ledger.flush(return_all=True)
    tokens = {t["name"]: t for t in (await admin.ok("GET", "/api/token/"))["items"]}
    assert tokens["test"]["remain_quota"] == first_reservation - row.quota >= 0
    (report,) = [r for r in reports if r.kind == "realtime"]
    assert (report.end_reason, report.status, report.quota) == ("quota_exhausted", 403, row.quota)


async def _closed(fake: FakeOpenAI) -> bool:
    return all(s.closed.is_set() for s in fake.realtime.sessions)


async def test_a_response_the_quota_cannot_cover_started_while_another_runs_is_cancelled_and_billed(
        gateway: Any, admin: AdminClient, fake_openai: FakeOpenAI, reports: list[Any]) -> None:
    """The token holds one response's reservation, given to the first response; the upstream
    starts a second of its own while the first runs (server VAD, on a committed audio turn) and
    none can be reserved for it: the session ends with the error event, and both responses are
    cancelled upstream and billed on the usage their ``response.done`` report (the second one
    on an empty reservation), none left running."""
    await admin.add_channel(base_url=fake_openai.base_url, models=MODEL, key=UPSTREAM_KEY)
    await prices(admin)
    token = await admin.add_token(remain_quota=ONE_RESPONSE)
    fake_openai.realtime.gate = asyncio.Event()  # each response holds after its first delta
    fake_openai.realtime.respond_to_commits = True
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=token, max_retries=0)
    async with client.realtime.connect(model=MODEL) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("hi"))
        await conn.response.create()
        first = (await until(conn, "response.output_text.delta"))[-1]["response_id"]
        await conn.input_audio_buffer.append(audio=base64.b64encode(b"\0" * 4800).decode())
        await conn.input_audio_buffer.commit()  # the fake starts a response beside the first
        events = await until(conn, "error")
        assert events[-1]["error"]["code"] == "pre_consume_token_quota_failed"
        second = next(e["response"]["id"] for e in events if e["type"] == "response.created")
        with pytest.raises(websockets.ConnectionClosed):
            await conn.recv_bytes()
    await client.close()
    (session,) = fake_openai.realtime.sessions
    await asyncio.wait_for(session.closed.wait(), 10)
    assert {e.get("response_id") for e in session.events if e["type"] == "response.cancel"} == {first, second}
    rows = await wait_for(lambda: _rows(gateway, 2))
    assert {other(row)["response_id"] for row in rows} == {first, second}
    for row in rows:
        details = other(row)
        assert (details["response_status"], details["usage_source"]) == ("cancelled", "upstream")
        assert row.quota > 0
    await gateway.gateway.ledger.flush(return_all=True)
    assert gateway.gateway.ledger.open_reservations == 0
    tokens = {t["name"]: t for t in (await admin.ok("GET", "/api/token/"))["items"]}
    assert tokens["test"]["used_quota"] == sum(row.quota for row in rows)
    (report,) = await wait_for(lambda: _reports(reports))
    assert (report.end_reason, report.quota) == ("quota_exhausted", sum(row.quota for row in rows))


async def test_frames_over_the_parse_limit_are_billed_from_what_they_say(
        sdk: openai.AsyncOpenAI, gateway: Any, fake_openai: FakeOpenAI) -> None:
    """Frames over 256 KiB are read too (off the event loop): a ``response.done`` that big is
    settled on its usage, not estimated when the session ends."""
    fake_openai.realtime.reply_text = " ".join(["word" * 25_000] * 3)  # three 100 kB deltas, a 300 kB done
    async with sdk.realtime.connect(model=MODEL) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("Say a lot."))
        await conn.response.create()
        done = await conn.recv_bytes()
        while json.loads(done)["type"] != "response.done":
            done = await conn.recv_bytes()
        assert len(done) > PARSE_LIMIT
        (row,) = await wait_for(lambda: _rows(gateway, 1))  # settled while the session still runs
        usage = json.loads(done)["response"]["usage"]
        assert (row.completion_tokens, row.quota) == (usage["output_tokens"], quota_of(usage))
        assert other(row)["usage_source"] == "upstream"


async def test_a_big_text_item_and_a_big_delta_count_for_a_cut_off_response(
        sdk: openai.AsyncOpenAI, gateway: Any, fake_openai: FakeOpenAI) -> None:
    """A response cut off is billed on the conversation and on what was seen of it: a client
    item over 256 KiB counts as the text it is, a delta over 256 KiB as its characters."""
    knobs = fake_openai.realtime
    knobs.reply_text, knobs.gate = "x" * 300_000 + " more", asyncio.Event()
    async with sdk.realtime.connect(model=MODEL) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("y" * 400_000))
        await conn.response.create()
        await until(conn, "response.output_text.delta")  # the big one, through the gateway
        knobs.drop_after_deltas = 2  # the upstream dies after the next delta (" more")
        knobs.gate.set()
        assert (await until(conn, "error"))[-1]["error"]["code"] == "upstream_closed"
    (row,) = await wait_for(lambda: _rows(gateway, 1))
    assert other(row)["usage_source"] == "estimated"
    assert row.completion_tokens == -(-300_005 // 4) and row.prompt_tokens >= 400_000 // 4


async def test_an_upstream_drop_mid_response_is_an_error_event_and_bills_what_was_seen(
        sdk: openai.AsyncOpenAI, gateway: Any, fake_openai: FakeOpenAI, reports: list[Any]) -> None:
    fake_openai.realtime.drop_after_deltas = 2
    async with sdk.realtime.connect(model=MODEL) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("Tell me something."))
        await conn.response.create()
        events = await until(conn, "error")
        assert events[-1]["error"]["code"] == "upstream_closed"
        seen = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
        assert seen and seen != REPLY_TEXT
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await conn.recv_bytes()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1011
    (row,) = await wait_for(lambda: _rows(gateway, 1))
    details = other(row)
    assert (details["usage_source"], details["end_reason"], details["response_status"]) == (
        "estimated", "upstream_error", "interrupted")
    assert row.completion_tokens == -(-len(seen) // 4) and row.quota > 0  # the text seen, and the prompt
    (report,) = [r for r in reports if r.kind == "realtime"]
    assert (report.end_reason, report.status) == ("upstream_error", 502)


async def test_a_client_that_leaves_mid_response_is_billed_on_the_cancelled_responses_usage(
        sdk: openai.AsyncOpenAI, gateway: Any, fake_openai: FakeOpenAI, reports: list[Any]) -> None:
    """The gateway cancels the response upstream and reads its ``response.done`` (status
    ``cancelled``, with usage) after the client is gone: the row has the upstream's numbers."""
    fake_openai.realtime.gate = asyncio.Event()  # the response holds after its first delta
    async with sdk.realtime.connect(model=MODEL) as conn:
        await conn.session.update(session=TEXT_SESSION)
        await conn.conversation.item.create(item=user_text("A long story, please."))
        await conn.response.create()
        await until(conn, "response.output_text.delta")
    (row,) = await wait_for(lambda: _rows(gateway, 1))
    details = other(row)
    assert (details["response_status"], details["usage_source"], details["end_reason"]) == (
        "cancelled", "upstream", "cancelled")
    assert row.completion_tokens == 2 and row.quota > 0  # "Hello": the word the response had made
    (session,) = fake_openai.realtime.sessions
    assert session.events[-1]["type"] == "response.cancel"
    (report,) = await wait_for(lambda: _reports(reports))
    assert (report.end_reason, report.status, report.quota) == ("client_gone", 499, row.quota)
    assert gateway.gateway.ledger.open_reservations == 0


async def _reports(reports: list[Any]) -> list[Any]:
    return [r for r in reports if r.kind == "realtime"]


async def test_a_client_that_leaves_between_responses_costs_nothing_more(
        sdk: openai.AsyncOpenAI, gateway: Any, admin: AdminClient, fake_openai: FakeOpenAI) -> None:
    async with sdk.realtime.connect(model=MODEL) as conn:
        await until(conn, "session.created")
    await wait_for(lambda: _closed(fake_openai))
    await gateway.gateway.ledger.flush(return_all=True)
    assert not await m.Log.all().count()  # no response, no row; the reservation went back whole
    (token,) = (await admin.ok("GET", "/api/token/"))["items"]
    assert token["remain_quota"] == 50 * QPU and token["used_quota"] == 0
    assert gateway.gateway.ledger.open_reservations == 0


# ---- limits ---------------------------------------------------------------------------------
async def limited_gateway(make_gateway: Any, fake: FakeOpenAI, **settings: Any) -> tuple[Any, str]:
    served = await make_gateway(settings=settings)
    admin = AdminClient(served.base_url)
    await admin.setup_root()
    await admin.add_channel(base_url=fake.base_url, models=MODEL, key=UPSTREAM_KEY)
    await prices(admin)
    token = await admin.add_token(remain_quota=50 * QPU)
    await admin.close()
    return served, token


@pytest.mark.parametrize(("settings", "code", "reason"), [
    ({"openai_realtime_idle_seconds": 0.5}, "idle_timeout", "idle_timeout"),
    ({"openai_realtime_max_session_seconds": 1.0}, "session_expired", "max_duration"),
])
async def test_idle_and_session_time_limits(make_gateway: Any, fake_openai: FakeOpenAI, settings: dict[str, Any],
                                            code: str, reason: str) -> None:
    served, token = await limited_gateway(make_gateway, fake_openai, **settings)
    seen: list[Any] = []
    served.gateway.observers.append(seen.append)
    async with websockets.connect(ws_url(served), additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        await raw_until(ws, "session.created")
        if reason == "max_duration":  # activity does not extend a session's time
            for _ in range(3):
                await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
                await asyncio.sleep(0.2)
        events = await raw_until(ws, "error")
        assert events[-1]["error"]["code"] == code
        with pytest.raises(websockets.ConnectionClosed):
            await ws.recv()
    (report,) = await wait_for(lambda: _reports(seen))
    assert report.end_reason == reason
    await wait_for(lambda: _closed(fake_openai))


async def test_oversized_and_too_many_client_events_end_the_session(make_gateway: Any,
                                                                    fake_openai: FakeOpenAI) -> None:
    served, token = await limited_gateway(make_gateway, fake_openai, openai_realtime_max_message_kb=1,
                                          openai_realtime_max_events_per_second=5)
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(ws_url(served), additional_headers=headers) as ws:
        await raw_until(ws, "session.created")
        await ws.send(json.dumps({"type": "input_audio_buffer.append", "audio": "A" * 2048}))
        assert (await raw_until(ws, "error"))[-1]["error"]["code"] == "message_too_large"
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await ws.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    async with websockets.connect(ws_url(served), additional_headers=headers) as ws:
        await raw_until(ws, "session.created")
        for _ in range(20):
            await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
        assert (await raw_until(ws, "error"))[-1]["error"]["code"] == "rate_limit_exceeded"
    # what went upstream before the limit was hit, and nothing after it
    assert len(fake_openai.realtime.sessions[0].events) == 0
    assert len(fake_openai.realtime.sessions[1].events) <= 5


# ---- dialing the upstream -----------------------------------------------------------------
async def test_a_failed_dial_fails_over_and_a_refused_key_disables_the_channel(
        gateway: Any, admin: AdminClient) -> None:
    async with FakeOpenAI() as a, FakeOpenAI() as b:
        id_a = await admin.add_channel(base_url=a.base_url, models=MODEL, name="A", priority=10)
        id_b = await admin.add_channel(base_url=b.base_url, models=MODEL, name="B", priority=0)
        await admin.set_option("RetryTimes", "2")
        # A is dialed again at once (no cooldown: tests/faults/test_channel_cooldown.py)
        await admin.set_option("ChannelCooldownBaseSeconds", "0")
        await prices(admin)
        token = await admin.add_token(remain_quota=50 * QPU)
        headers = {"Authorization": f"Bearer {token}"}
        a.push_fault(Fault("status", status=500))
        async with websockets.connect(ws_url(gateway), additional_headers=headers) as ws:
            await raw_until(ws, "session.created")
        assert len(b.realtime.sessions) == 1 and not a.realtime.sessions
        a.push_fault(Fault("status", status=401))
        async with websockets.connect(ws_url(gateway), additional_headers=headers) as ws:
            await raw_until(ws, "session.created")
        assert len(b.realtime.sessions) == 2
        await wait_for(lambda: _disabled(id_a))
        b.push_fault(Fault("status", status=503))  # A is out of rotation, B refuses: the client gets it
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(ws_url(gateway), additional_headers=headers):
                pass
        assert refused.value.response.status_code == 503
        assert (await m.Channel.get(id=id_b)).status == m.CHANNEL_ENABLED
    await gateway.gateway.ledger.flush(return_all=True)
    (token_row,) = (await admin.ok("GET", "/api/token/"))["items"]
    assert token_row["remain_quota"] == 50 * QPU  # sessions without a response cost nothing


async def _disabled(channel_id: int) -> bool:
    return bool((await m.Channel.get(id=channel_id)).status == m.CHANNEL_AUTO_DISABLED)
