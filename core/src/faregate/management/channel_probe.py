"""Asking a channel's upstream directly (admin): a test request through the channel's own
provider plugin (``GET /api/channel/test/{id}``, new-api's ``{success, message, time}``),
every enabled channel in the background (``GET /api/channel/test``), the upstream's
model list (``GET /api/channel/fetch_models/{id}``) and the account's balance where the
provider can tell it (``GET /api/channel/update_balance[/{id}]``, :attr:`Provider.fetch_balance`).
Upstream text is shielded as in the relay: the channel's keys never reach the answer."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from quart import Blueprint, Response
from quart_schema import document_response, validate_querystring

from faregate import jsonutil
from faregate.billing.model_prices import options_price
from faregate.billing.pricing import Price
from faregate.canonical import ChatRequest, Message, TextPart
from faregate.contracts import ChannelProbe, Provider, UpstreamRequest, UpstreamTarget
from faregate.db import models as m
from faregate.errors import GatewayError, shield
from faregate.exchange.attempts import MAX_ERROR_BODY, upstream_target
from faregate.exchange.channel_request import customize
from faregate.exchange.routing import map_model
from faregate.exchange.system_prompt import with_system_prompt
from faregate.kit.http_json import SHAPE_ERRORS
from faregate.management.channel_test_kinds import (
    CHAT,
    ENDPOINT_TESTS,
    MAX_ENDPOINT_TYPE,
    TEST_MAX_TOKENS,
    TEST_ORDER,
    TEST_PROMPT,
    endpoint_kind,
    guessed_kind,
)
from faregate.management.common import BadInput, fail, gateway, ok, parse_id, require
from faregate.management.host import ManagementHost
from faregate.management.openapi import Ok, Shape
from faregate.principals import Principal
from faregate.security.redact import redact
from faregate.state.multi_keys import is_multi_key, read_info
from faregate.state.snapshot import ChannelEntry, channel_entry
from faregate.upstream import UpstreamAddressRefused, UpstreamResponse, UpstreamTransportError

blueprint = Blueprint("channel_probe", __name__)
log = logging.getLogger("faregate")

#: a balance answer is small; more than this is not one
BALANCE_MAX_BODY = 256 * 1024
#: seconds one channel's balance query (all its requests) may take
BALANCE_TIMEOUT = 30.0
#: how many channels "update all balances" asks at once
BALANCE_CONCURRENCY = 4
MESSAGE_MAX = 300
NO_BALANCE = "this channel type does not report a balance"


async def _target(entry: ChannelEntry, provider: Provider, model: str) -> UpstreamTarget:
    return await upstream_target(entry, provider, map_model(entry.model_mapping, model), stream=False,
                                 client_headers={})


async def _read(resp: UpstreamResponse, limit: int) -> bytes:
    """The whole body, at most ``limit`` bytes (a longer one is an error)."""
    chunks, size = [], 0
    while chunk := await resp.read_chunk():
        size += len(chunk)
        if size > limit:
            raise GatewayError(502, f"the upstream's answer is longer than {limit} bytes", code="bad_response_body")
        chunks.append(chunk)
    return b"".join(chunks)


async def _send(gw: ManagementHost, req: UpstreamRequest, secrets: tuple[str, ...], provider: Provider,
                limit: int = MAX_ERROR_BODY * 8, proxy: str = "", success: tuple[int, ...] = (200,)
                ) -> tuple[bytes, float]:
    """The upstream's 200 body (or that of another ``success`` status) and the seconds it
    took; a shielded GatewayError otherwise. ``proxy``: the channel's (its every request
    goes through it)."""
    started = time.perf_counter()
    try:
        resp = await gw.upstream.send(req, proxy=proxy)
        try:
            body = await _read(resp, limit)
        finally:
            await resp.aclose()
    except UpstreamAddressRefused as exc:  # the host and why, never the address it resolved to
        raise GatewayError(502, f"the request failed: {exc}", code="address_refused") from None
    except UpstreamTransportError as exc:
        raise GatewayError(502, f"the request failed: {type(exc).__name__}", code="do_request_failed") from None
    if resp.status_code not in success:
        err = shield(provider.parse_error(resp.status_code, body), secrets, resp.status_code)
        # the admin sees the upstream's (redacted) words, not the neutral message a caller gets;
        # its type and code stay, for the channel monitor's disable rules
        raise GatewayError(resp.status_code, f"upstream answered {resp.status_code}: {err.detail or err.message}",
                           type=err.type, code=err.code, upstream=True, kind=err.kind)
    return body, time.perf_counter() - started


def _probe(provider: Provider, kind: str, target: UpstreamTarget) -> ChannelProbe | None:
    """The provider's test of ``kind`` (a plugin's bug is a failed test, not a 500)."""
    try:
        return provider.probe(kind, target)
    except GatewayError:
        raise
    except Exception as exc:  # noqa: BLE001 - a plugin's bug must not become a 500
        log.warning("%s: building a %s channel test failed: %s", provider.name, kind, type(exc).__name__)
        raise GatewayError(500, f"the {kind} test could not be built ({type(exc).__name__})") from None


def choose_test(provider: Provider, target: UpstreamTarget, kind: str, model: str) -> tuple[str, ChannelProbe | None]:
    """The kind tested and, for a kind other than chat, the provider's request of it. ``kind``
    "" is the default: new-api's guess from the model's name, else chat, else the first of
    :data:`TEST_ORDER` the channel's type can be tested on. A kind asked for that it cannot
    be tested on is a ``GatewayError`` saying so."""
    channel_type, name = target.channel_type, provider.name
    if kind:
        if kind == CHAT:
            if not provider.serves(CHAT, channel_type):
                raise GatewayError(400, f"channel type {channel_type} ({name}) does not serve the chat endpoint")
            return CHAT, None
        probe = _probe(provider, kind, target)
        if probe is None:
            if provider.serves(kind, channel_type):
                raise GatewayError(400, f"channel type {channel_type} ({name}) has no {kind} test")
            raise GatewayError(400, f"channel type {channel_type} ({name}) does not serve the {kind} endpoint")
        return kind, probe
    for candidate in dict.fromkeys((guessed_kind(model), CHAT, *TEST_ORDER)):
        if candidate == CHAT:
            if provider.serves(CHAT, channel_type):
                return CHAT, None
            continue
        probe = _probe(provider, candidate, target)
        if probe is not None:
            return candidate, probe
    raise GatewayError(400, f"channel type {channel_type} ({name}) has no endpoint a channel test can call")


async def test_one(gw: ManagementHost, row: m.Channel, model: str | None, kind: str = "",
                   me: Principal | None = None) -> tuple[bool, str, float]:
    """One minimal request of endpoint ``kind`` ("" : the channel's default, see
    :func:`choose_test`) through the channel's provider, with everything the relay adds
    (model mapping, system prompt, overrides, proxy); billed nothing, logged as a test when
    an admin (``me``) asked for it."""
    failed, seconds = await probe_channel(gw, row, model, kind, me)
    return (False, failed.message, 0.0) if failed is not None else (True, "", seconds)


async def probe_channel(gw: ManagementHost, row: m.Channel, model: str | None, kind: str = "",
                        me: Principal | None = None, key: str | None = None) -> tuple[GatewayError | None, float]:
    """:func:`test_one`'s test: the error it failed with (an upstream's status, type and
    code kept), else None, and the seconds the upstream took. ``key``: test with that key of
    a multi-key channel (disabled or not), not one of its enabled keys."""
    entry = channel_entry(row, gw.box)
    if key is not None:
        entry.keys = [key]
    provider = gw.providers.get(entry.type)
    if provider is None:
        return GatewayError(400, f"no installed plugin serves channel type {entry.type}"), 0.0
    model = model or row.test_model or (entry.models[0] if entry.models else "")
    if not model:
        return GatewayError(400, "the channel lists no model to test with"), 0.0
    if kind == CHAT and not provider.serves(CHAT, entry.type):  # refused before any credential is made
        return GatewayError(400, f"channel type {entry.type} ({provider.name}) does not serve the chat endpoint"), 0.0
    features = entry.features
    try:
        if features.problem:
            raise GatewayError(400, f"the channel's settings are refused: {features.problem}")
        target = await _target(entry, provider, model)
        kind, probe = choose_test(provider, target, kind, model)
        if probe is None:
            chat = ChatRequest(model=model, messages=[Message("user", [TextPart(TEST_PROMPT)])],
                               max_tokens=TEST_MAX_TOKENS)
            if features.system_prompt:
                chat, _ = with_system_prompt(chat, features.system_prompt, features.system_prompt_override)
            req = provider.build_request(chat, target)
        else:
            req = probe.request
        customize(req, features, target.key, {}, lambda: {"model": target.model, "upstream_model": target.model,
                                                           "original_model": model, "is_retry": False,
                                                           "retry_index": 0, "request_headers": {}})
        secrets = (*entry.keys, target.key)
        body, seconds = await _send(gw, req, secrets, provider, proxy=features.proxy,
                                    success=probe.success_statuses if probe is not None else (200,))
        if probe is None:
            provider.parse_response(body)  # a 200 the relay could not read is a failed test too
        else:
            try:
                probe.check(body)
            except SHAPE_ERRORS:
                raise GatewayError(502, f"the upstream's answer is not a {kind} answer") from None
            except GatewayError as failed:  # what the answer says went wrong (a failed job): redacted
                raise GatewayError(failed.status, f"upstream answered: {redact(failed.message, secrets)}") from None
    except GatewayError as err:
        return err, 0.0
    now = int(time.time())
    await m.Channel.filter(id=row.id).update(test_time=now, response_time=int(seconds * 1000))
    if me is not None:  # new-api logs a test as a consume row; here it costs nothing
        await m.Log.create(user_id=me.user.id, username=me.user.username, type=m.LOG_CONSUME, created_at=now,
                           content="channel test", model_name=model[:255], quota=0, channel_id=row.id,
                           use_time=int(seconds), other=jsonutil.dumps_str(
                               {"channel_test": True, "endpoint": kind, **_test_ratios(gw, model, me)}))
    return None, seconds


def _test_ratios(gw: ManagementHost, model: str, me: Principal) -> dict[str, float]:
    """The ratios a consume row carries (its log view prints them; without them new-api's shows
    "$NaN"): the model's price as the relay would charge the admin's own group."""
    options = gw.snapshot.options
    group_ratio = float(options.group_ratio_for(me.user.group, me.user.group))
    price = options_price(options, model, group_ratio) or Price(group_ratio=group_ratio)
    ratios = {"model_ratio": price.model_ratio, "group_ratio": price.group_ratio,
              "completion_ratio": price.completion_ratio, "cache_tokens": 0, "cache_ratio": price.cache_ratio}
    if price.model_price is not None:
        ratios["model_price"] = price.model_price
    return ratios


class ChannelTestQuery(BaseModel):
    """``GET /api/channel/test/{id}``'s query (other parameters are ignored)."""

    model_config = ConfigDict(extra="ignore")
    model: Annotated[str, Field(max_length=255)] | None = None
    endpoint_type: Annotated[str, Field(max_length=MAX_ENDPOINT_TYPE)] | None = Field(
        default=None, description="new-api's endpoint type: " + ", ".join(sorted(ENDPOINT_TESTS)))


class ChannelTestAnswer(BaseModel):
    """new-api's ``{success, message, time}`` (seconds)."""

    model_config = ConfigDict(extra="forbid")
    success: bool
    message: str
    time: float


@blueprint.get("/api/channel/test/<channel_id>")
@require(m.ROLE_ADMIN)
@validate_querystring(ChannelTestQuery)
@document_response(ChannelTestAnswer)
async def test_channel(channel_id: str, me: Principal, query_args: ChannelTestQuery) -> Response:
    """``?model=`` (default: the channel's test model, else its first) and
    ``?endpoint_type=`` (new-api's: ``openai``, ``anthropic``, ``gemini`` (chat),
    ``openai-response``, ``embeddings``, ``image-generation``, ``jina-rerank``; also
    ``moderations``, ``completions``; without it, new-api's guess from the model's name among
    the kinds the channel can be tested on) → ``{success, message, time}`` with ``time`` in
    seconds."""
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    model = (query_args.model or "").strip() or None
    kind = endpoint_kind(query_args.endpoint_type or "")
    if kind is None:
        raise BadInput(f"endpoint_type: expected one of {', '.join(sorted(ENDPOINT_TESTS))}", status=400)
    success, message, seconds = await test_one(gateway(), row, model, kind, me)
    return Response(jsonutil.dumps({"success": success, "message": message, "time": round(seconds, 3)}),
                    content_type="application/json")


@blueprint.get("/api/channel/test")
@require(m.ROLE_ADMIN)
async def test_all(me: Principal) -> Response:
    """Tests every enabled channel in the background (a few at a time); the results land
    in each channel's ``test_time`` / ``response_time`` and the server log."""
    gw = gateway()

    async def run() -> None:
        limit = asyncio.Semaphore(4)

        async def one(row: m.Channel) -> None:
            async with limit:
                success, message, _ = await test_one(gw, row, None)
                if not success:
                    log.warning("channel %s failed its test: %s", row.id, message)

        await asyncio.gather(*(one(r) for r in await m.Channel.filter(status=m.CHANNEL_ENABLED)))

    gw.spawn(run())
    return ok()


async def upstream_models(gw: ManagementHost, entry: ChannelEntry) -> list[str]:
    """The models the channel's upstream lists, asked through its provider and the channel's
    proxy, as a relay request goes; a GatewayError (its message safe to show) when it cannot."""
    provider = gw.providers.get(entry.type)
    if provider is None:
        raise GatewayError(400, f"no installed plugin serves channel type {entry.type}")
    target = await _target(entry, provider, entry.models[0] if entry.models else "")
    req = provider.models_request(target)
    if req is None:
        raise GatewayError(400, "this channel type cannot list its models")
    body, _ = await _send(gw, req, (*entry.keys, target.key), provider, proxy=entry.features.proxy)
    return [str(name) for name in provider.parse_models(body)]


@blueprint.get("/api/channel/fetch_models/<channel_id>")
@require(m.ROLE_ADMIN)
async def fetch_models(channel_id: str, me: Principal) -> Response:
    """The models the channel's upstream lists (for filling in the channel's models)."""
    gw = gateway()
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    try:
        return ok(await upstream_models(gw, channel_entry(row, gw.box)))
    except GatewayError as err:
        return fail(err.message)


# -- balances ---------------------------------------------------------------------------
class BalanceError(Exception):
    """Why a channel's balance is unknown (a message safe to show the admin)."""


async def query_balance(gw: ManagementHost, row: m.Channel) -> float:
    """Ask the channel's upstream for its balance through its provider and store it with
    ``balance_updated_time``; :class:`BalanceError` when it cannot be told."""
    if is_multi_key(read_info(row.channel_info)):
        raise BalanceError("a multi-key channel does not report a balance")
    entry = channel_entry(row, gw.box)
    provider = gw.providers.get(entry.type)
    if provider is None:
        raise BalanceError(f"no installed plugin serves channel type {entry.type}")
    if provider.fetch_balance is None:
        raise BalanceError(NO_BALANCE)
    secrets: list[str] = list(entry.keys)

    async def fetch(req: UpstreamRequest) -> bytes:
        body, _ = await _send(gw, req, tuple(secrets), provider, BALANCE_MAX_BODY, entry.features.proxy)
        return body

    try:
        async with asyncio.timeout(BALANCE_TIMEOUT):
            target = await _target(entry, provider, entry.models[0] if entry.models else "")
            secrets.append(target.key)
            balance = await provider.fetch_balance(target, fetch)
    except GatewayError as err:
        raise BalanceError(err.message[:MESSAGE_MAX]) from None
    except TimeoutError:
        raise BalanceError(f"the upstream did not answer within {BALANCE_TIMEOUT:.0f} s") from None
    except Exception as exc:  # noqa: BLE001 - a plugin's bug must not become a 500
        log.warning("channel %s: the balance query failed: %s", row.id, type(exc).__name__)
        raise BalanceError(f"the balance query failed ({type(exc).__name__})") from None
    if balance is None:
        raise BalanceError(NO_BALANCE)
    if isinstance(balance, bool) or not isinstance(balance, int | float) or not math.isfinite(balance):
        raise BalanceError("the provider reported no usable balance")
    now = int(time.time())
    await m.Channel.filter(id=row.id).update(balance=float(balance), balance_updated_time=now)
    row.balance, row.balance_updated_time = float(balance), now
    return float(balance)


class BalanceView(Shape):
    balance: float
    balance_updated_time: int


class BalanceAnswer(BaseModel):
    """new-api's ``{success, message, balance}``, and the envelope's ``data``."""

    model_config = ConfigDict(extra="forbid")
    success: Literal[True]
    message: str
    balance: float
    data: BalanceView


class BalanceSummary(Shape):
    total: int
    updated: int
    failed: int
    unsupported: int
    disabled: int


@blueprint.get("/api/channel/update_balance/<channel_id>")
@require(m.ROLE_ADMIN)
@document_response(BalanceAnswer)
async def update_balance(channel_id: str, me: Principal) -> Response:
    """The channel's balance (USD), asked of its upstream and stored: new-api's
    ``{success, message, balance}``, also as ``data: {balance, balance_updated_time}``."""
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    try:
        balance = await query_balance(gateway(), row)
    except BalanceError as err:
        return fail(str(err))
    return Response(jsonutil.dumps({"success": True, "message": "", "balance": balance, "data": {
        "balance": balance, "balance_updated_time": row.balance_updated_time}}), content_type="application/json")


@blueprint.get("/api/channel/update_balance")
@require(m.ROLE_ADMIN)
@document_response(Ok[BalanceSummary])
async def update_all_balances(me: Principal) -> Response:
    """Every enabled single-key channel whose type reports a balance, a few at a time:
    ``{total, updated, failed, unsupported, disabled}``. As new-api, a channel whose
    balance is used up (≤ 0) is disabled when automatic disabling is on and the channel
    allows it (``auto_ban``)."""
    return ok(await refresh_balances(gateway()))


async def refresh_balances(gw: ManagementHost) -> dict[str, int]:
    """Ask every enabled single-key channel for its balance (``GET /api/channel/update_balance``,
    and the automatic refresh every ``channel_update_frequency`` minutes)."""
    rows = [r for r in await m.Channel.filter(status=m.CHANNEL_ENABLED) if not is_multi_key(read_info(r.channel_info))]
    counts = {"total": len(rows), "updated": 0, "failed": 0, "unsupported": 0, "disabled": 0}
    limit = asyncio.Semaphore(BALANCE_CONCURRENCY)

    async def one(row: m.Channel) -> None:
        async with limit:
            try:
                balance = await query_balance(gw, row)
            except BalanceError as err:
                counts["unsupported" if str(err) == NO_BALANCE else "failed"] += 1
                return
        counts["updated"] += 1
        if balance <= 0 and row.auto_ban and gw.snapshot.options.auto_disable:
            await gw.disable_channel(row.id, "the balance is used up")
            counts["disabled"] += 1

    await asyncio.gather(*(one(r) for r in rows))
    return counts
