"""Asking a channel's upstream directly (admin): a test request through the channel's own
provider plugin (``GET /api/channel/test/{id}``, new-api's ``{success, message, time}``),
every enabled channel in the background (``GET /api/channel/test``), and the upstream's
model list (``GET /api/channel/fetch_models/{id}``). Upstream text is shielded as in the
relay: the channel's keys never reach the answer."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from quart import Blueprint, Response, request

from faregate import jsonutil
from faregate.canonical import ChatRequest, Message, TextPart
from faregate.contracts import Provider, UpstreamRequest, UpstreamTarget
from faregate.db import models as m
from faregate.errors import GatewayError, shield
from faregate.exchange.attempts import MAX_ERROR_BODY, apply_header_override, upstream_target
from faregate.exchange.routing import map_model
from faregate.gateway import Gateway
from faregate.management.common import fail, gateway, ok, parse_id, require
from faregate.principals import Principal
from faregate.state.snapshot import ChannelEntry, channel_entry
from faregate.upstream import UpstreamTransportError

blueprint = Blueprint("channel_probe", __name__)
log = logging.getLogger("faregate")

TEST_PROMPT = "hi"
TEST_MAX_TOKENS = 16


async def _target(entry: ChannelEntry, provider: Provider, model: str) -> UpstreamTarget:
    return await upstream_target(entry, provider, map_model(entry.model_mapping, model), stream=False,
                                 client_headers={})


async def _send(gw: Gateway, req: UpstreamRequest, secrets: tuple[str, ...],
                provider: Provider) -> tuple[bytes, float]:
    """The upstream's 200 body and the seconds it took; a shielded GatewayError otherwise."""
    started = time.perf_counter()
    try:
        resp = await gw.upstream.send(req)
        try:
            body = await resp.aread(MAX_ERROR_BODY * 8)
        finally:
            await resp.aclose()
    except UpstreamTransportError as exc:
        raise GatewayError(502, f"the request failed: {type(exc).__name__}", code="do_request_failed") from None
    if resp.status_code != 200:
        err = shield(provider.parse_error(resp.status_code, body), secrets, resp.status_code)
        # the admin sees the upstream's (redacted) words, not the neutral message a caller gets
        raise GatewayError(resp.status_code, f"upstream answered {resp.status_code}: {err.detail or err.message}")
    return body, time.perf_counter() - started


async def test_one(gw: Gateway, row: m.Channel, model: str | None) -> tuple[bool, str, float]:
    entry = channel_entry(row, gw.box)
    provider = gw.providers.get(entry.type)
    if provider is None:
        return False, f"no installed plugin serves channel type {entry.type}", 0.0
    model = model or row.test_model or (entry.models[0] if entry.models else "")
    if not model:
        return False, "the channel lists no model to test with", 0.0
    try:
        target = await _target(entry, provider, model)
        req = provider.build_request(ChatRequest(model=model, messages=[Message("user", [TextPart(TEST_PROMPT)])],
                                                 max_tokens=TEST_MAX_TOKENS), target)
        apply_header_override(req, entry.header_override, target.key)
        body, seconds = await _send(gw, req, (*entry.keys, target.key), provider)
        provider.parse_response(body)  # a 200 the relay could not read is a failed test too
    except GatewayError as err:
        return False, err.message, 0.0
    await m.Channel.filter(id=row.id).update(test_time=int(time.time()), response_time=int(seconds * 1000))
    return True, "", seconds


@blueprint.get("/api/channel/test/<channel_id>")
@require(m.ROLE_ADMIN)
async def test_channel(channel_id: str, me: Principal) -> Response:
    """``?model=`` (default: the channel's test model, else its first) → ``{success,
    message, time}`` with ``time`` in seconds."""
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    model = request.args.get("model", "").strip()[:255] or None
    success, message, seconds = await test_one(gateway(), row, model)
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


@blueprint.get("/api/channel/fetch_models/<channel_id>")
@require(m.ROLE_ADMIN)
async def fetch_models(channel_id: str, me: Principal) -> Response:
    """The models the channel's upstream lists (for filling in the channel's models)."""
    gw = gateway()
    row = await m.Channel.get_or_none(id=parse_id(channel_id))
    if row is None:
        return fail("channel not found")
    entry = channel_entry(row, gw.box)
    provider = gw.providers.get(entry.type)
    if provider is None:
        return fail(f"no installed plugin serves channel type {entry.type}")
    target = await _target(entry, provider, entry.models[0] if entry.models else "")
    req = provider.models_request(target)
    if req is None:
        return fail("this channel type cannot list its models")
    try:
        body, _ = await _send(gw, req, (*entry.keys, target.key), provider)
        models: list[Any] = provider.parse_models(body)
    except GatewayError as err:
        return fail(err.message)
    return ok(models)
