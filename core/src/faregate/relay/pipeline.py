"""One request's way through the gate: authenticate, read, price and reserve, pick
a channel, call it (retrying before the first byte), answer in the client's format,
settle exactly once. See docs/architecture.md for the diagram."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from quart import Response, request
from werkzeug.exceptions import HTTPException

from faregate import jsonutil
from faregate.billing.ledger import InsufficientQuota, LogEntry
from faregate.billing.pricing import Price, estimate_tokens, reserve_quota, usage_quota
from faregate.canonical import ReasoningDelta, StreamError, TextDelta, ToolCallDelta, Usage, UsageEvent
from faregate.contracts import (
    InboundFormat,
    PassthroughStream,
    Provider,
    StreamEncoder,
    UpstreamRequest,
    UpstreamTarget,
)
from faregate.db import models as m
from faregate.errors import GatewayError, bad_request
from faregate.hooks import await_me_maybe
from faregate.relay.context import AuthRequest, Principal, RelayContext
from faregate.relay.routing import map_model, select_channel
from faregate.relay.sse import SSEError, SSESplitter
from faregate.relay.upstream import UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.gateway import Gateway

log = logging.getLogger("faregate.relay")

_MAX_ERROR_BODY = 1 << 20
_JSON = "application/json"


def new_request_id() -> str:
    return time.strftime("%Y%m%d%H%M%S") + uuid.uuid4().hex[:16]


class Relay:
    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway

    # ---- entry point ---------------------------------------------------------------
    async def handle(self, fmt: InboundFormat) -> Response:
        rid = new_request_id()
        started = time.perf_counter()
        try:
            ctx = await self._prepare(fmt, rid, started)
        except GatewayError as err:
            return self._error(fmt, err, rid)
        except HTTPException:
            raise  # 413 and friends: Quart's handlers answer them
        except Exception:
            # the database (reservation) is unreachable: never relay without a reservation
            log.exception("could not prepare request %s", rid)
            return self._error(fmt, GatewayError(503, "the gateway cannot reach its database",
                                                 code="db_unavailable"), rid)
        try:
            return await self._relay(ctx)
        except GatewayError as err:
            self._fail(ctx, err)
            return self._error(fmt, err, rid)
        except Exception:
            log.exception("relay failed (request %s)", rid)
            err = GatewayError(500, "internal error", type="new_api_error", code="internal_error")
            self._fail(ctx, err)
            return self._error(fmt, err, rid)

    def _error(self, fmt: InboundFormat, err: GatewayError, rid: str) -> Response:
        status, body = fmt.render_error(err, rid)
        headers = {"X-Oneapi-Request-Id": rid}
        if err.retry_after:
            headers["Retry-After"] = str(int(err.retry_after))
        return Response(body, status=status, content_type=_JSON, headers=headers)

    # ---- before any upstream call ------------------------------------------------------
    async def _prepare(self, fmt: InboundFormat, rid: str, started: float) -> RelayContext:
        gw = self.gw
        headers = request.headers
        principal = await self.authenticate_request(fmt)
        raw, body = await read_json_body()
        summary = fmt.summarize(body)
        check_model_allowed(principal, summary.model)
        token = principal.token
        ctx = RelayContext(request_id=rid, format=fmt, path=request.path, body=body, raw=raw, summary=summary,
                           principal=principal, client_ip=_client_ip(), headers=headers,
                           started=started)
        if not gw.snapshot.levels(principal.group, summary.model) and principal.pinned_channel is None:
            raise GatewayError(
                503, f"no available channel for model {summary.model} under group {principal.group}",
                code="model_not_found")
        price = self.price(ctx)
        ctx.price = price
        estimate = reserve_quota(price, estimate_tokens(summary.prompt_chars),
                                 summary.max_tokens or gw.snapshot.options.default_max_tokens)
        for check in gw.quota_checks:
            denial = await await_me_maybe(check.check(ctx, estimate))
            if denial is not None:
                raise denial
        try:
            ctx.reservation = await gw.ledger.reserve(principal.user.id, None if token is None or token.unlimited
                                                      else token.id, estimate)
        except InsufficientQuota as exc:
            if exc.kind == "token":
                raise GatewayError(403, "the API key's quota is not enough for this request",
                                   code="pre_consume_token_quota_failed") from None
            raise GatewayError(403, "user quota is not enough", code="insufficient_user_quota") from None
        return ctx

    async def authenticate_request(self, fmt: InboundFormat) -> Principal:
        """The current request's API key, in ``fmt``'s place for it, after catching up with
        changes other workers made (for plugin routes too, e.g. token counting)."""
        await self.gw.feed.catch_up()
        return await self.authenticate(AuthRequest(headers=request.headers, args=request.args,
                                                   remote_addr=_client_ip(), format=fmt))

    async def authenticate(self, auth_req: AuthRequest) -> Principal:
        for authenticator in self.gw.api_key_authenticators:
            principal = await await_me_maybe(authenticator.authenticate(auth_req))
            if principal is not None:
                return principal
        raise GatewayError(401, "no API key provided", code="invalid_api_key", type="new_api_error")

    def price(self, ctx: RelayContext) -> Price:
        for pricer in self.gw.pricers:
            price = pricer.price(ctx, None)
            if price is not None:
                return price
        raise GatewayError(500, f"no price configured for model {ctx.model}", code="model_price_error")

    # ---- attempts ----------------------------------------------------------------------
    async def _relay(self, ctx: RelayContext) -> Response:
        gw = self.gw
        options = gw.snapshot.options
        excluded: set[int] = set()
        last_error: GatewayError | None = None
        original_body, original_raw = ctx.body, ctx.raw
        attempts = options.retry_times + 1
        if ctx.principal.pinned_channel is not None:
            attempts = 1
        for attempt in range(attempts):
            ctx.attempt = attempt
            channel = self._choose(ctx, attempt, excluded)
            if channel is None:
                break
            ctx.channel = channel
            ctx.tried.append(channel.id)
            provider = gw.providers.get(channel.type)
            if provider is None:
                excluded.add(channel.id)
                last_error = GatewayError(503, f"channel type {channel.type} has no provider plugin loaded",
                                          code="channel:invalid_type")
                continue
            ctx.upstream_model = map_model(channel.model_mapping, ctx.model)
            if attempt:  # rewriters see the client's request afresh on every attempt
                ctx.body, ctx.raw, ctx._canonical = original_body, original_raw, None
            for rewriter in gw.request_rewriters:
                await await_me_maybe(rewriter.rewrite(ctx))
            target = UpstreamTarget(
                base_url=channel.base_url or provider.default_base_url,
                key=random.choice(channel.keys), model=ctx.upstream_model, stream=ctx.summary.stream,
                channel_type=channel.type, other=channel.other, settings=channel.setting,
                client_headers=ctx.headers,
            )
            passthrough = provider.native_format == ctx.format.name and not channel.setting.get("force_convert")
            if passthrough:
                upstream_req = provider.build_passthrough(ctx.body, ctx.raw, target, ctx.summary)
            else:
                upstream_req = provider.build_request(ctx.canonical(), target)
            _apply_header_override(upstream_req, channel.header_override, target.key)
            try:
                resp = await gw.upstream.send(upstream_req, stream=ctx.summary.stream)
            except UpstreamTransportError as exc:
                log.warning("channel %s: request failed: %s", channel.id, exc)
                last_error = GatewayError(500, "upstream error: do request failed", code="do_request_failed",
                                          upstream=True)
                excluded.add(channel.id)
                continue
            if resp.status_code != 200:
                err = await self._upstream_error(provider, resp, channel)
                excluded.add(channel.id)
                last_error = err
                if not options.should_retry_status(err.status) or err.code == "bad_response_body":
                    raise err
                continue
            if not ctx.summary.stream:
                return await self._finish_regular(ctx, provider, resp, passthrough)
            opened = await self._first_chunk(resp)
            if opened is None:
                last_error = GatewayError(502, "upstream closed the stream before sending anything",
                                          code="empty_response", upstream=True)
                excluded.add(channel.id)
                continue
            return self._stream_response(ctx, provider, resp, passthrough, opened)
        if last_error is not None:
            raise last_error
        raise GatewayError(503, f"no available channel for model {ctx.model} under group {ctx.principal.group}",
                           code="model_not_found")

    def _choose(self, ctx: RelayContext, attempt: int, excluded: set[int]) -> Any:
        gw = self.gw
        pinned = ctx.principal.pinned_channel
        if pinned is not None:
            channel = gw.snapshot.channels.get(pinned)
            if channel is None or channel.status != m.CHANNEL_ENABLED:
                raise GatewayError(403, "the pinned channel is disabled or does not exist", code="access_denied")
            return channel
        levels = gw.snapshot.levels(ctx.principal.group, ctx.model)
        return select_channel(levels, attempt, excluded, ctx, gw.channel_filters, gw.channel_selectors)

    async def _upstream_error(self, provider: Provider, resp: UpstreamResponse, channel: Any) -> GatewayError:
        try:
            body = await resp.aread(_MAX_ERROR_BODY)
        except UpstreamTransportError:
            body = b""
        finally:
            await resp.aclose()
        status = resp.status_code
        err = provider.parse_error(status, body)
        err.upstream = True
        retry_after = resp.headers.get("retry-after")
        if retry_after:
            with contextlib.suppress(ValueError):
                err.retry_after = float(retry_after)
        mapped = channel.status_code_mapping.get(str(status))
        if mapped:
            with contextlib.suppress(ValueError):
                err.status = int(mapped)
        options = self.gw.snapshot.options
        if channel.auto_ban and options.auto_disable and options.should_disable(status, err):
            self.gw.snapshot.drop_channel(channel.id)  # this worker stops routing to it now
            self.gw.spawn(self.gw.disable_channel(channel.id, f"upstream answered {status}"))
        log.warning("channel %s answered %s (%s)", channel.id, status, err.code)
        return err

    # ---- regular responses ---------------------------------------------------------------
    async def _finish_regular(self, ctx: RelayContext, provider: Provider, resp: UpstreamResponse,
                              passthrough: bool) -> Response:
        try:
            body = await resp.aread()
        except UpstreamTransportError:
            raise GatewayError(502, "upstream closed the connection mid-response", code="read_response_body_failed",
                               upstream=True) from None
        finally:
            await resp.aclose()
        response = None
        if passthrough:
            usage = provider.passthrough_usage(body)
            out = body
        else:
            response = provider.parse_response(body)
            usage = response.usage
            out = jsonutil.dumps(ctx.format.render_response(response, ctx.model))
        output_chars = 0
        if usage is None:  # the upstream reported no usage: bill the answer we saw (estimated)
            response = response or provider.parse_response(body)
            output_chars = sum(len(getattr(p, "text", "") or getattr(p, "arguments", "") or "")
                               for p in response.message.content)
        self._settle(ctx, usage, end_reason="done", output_chars=output_chars)
        return Response(out, status=200, content_type=_JSON, headers={"X-Oneapi-Request-Id": ctx.request_id})

    # ---- streams -------------------------------------------------------------------------
    async def _first_chunk(self, resp: UpstreamResponse) -> tuple[bytes, AsyncIterator[bytes]] | None:
        """Read until the first bytes arrive; a failure here may still be retried."""
        iterator = resp.aiter_bytes()
        try:
            async with asyncio.timeout(self.gw.settings.first_byte_timeout):
                async for chunk in iterator:
                    if chunk:
                        return chunk, iterator
        except (UpstreamTransportError, TimeoutError):
            pass
        await resp.aclose()
        return None

    def _stream_response(self, ctx: RelayContext, provider: Provider, resp: UpstreamResponse, passthrough: bool,
                         opened: tuple[bytes, AsyncIterator[bytes]]) -> Response:
        body = self._stream_body(ctx, provider, resp, passthrough, *opened)
        response = Response(body, status=200, content_type=ctx.format.stream_content_type,
                            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                     "X-Oneapi-Request-Id": ctx.request_id})
        response.timeout = None  # Quart would cut long streams at RESPONSE_TIMEOUT
        return response

    async def _stream_body(self, ctx: RelayContext, provider: Provider, resp: UpstreamResponse, passthrough: bool,
                           first: bytes, iterator: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        idle = self.gw.settings.stream_idle_timeout
        reader = _StreamReader(provider.passthrough_stream(ctx.summary) if passthrough else None,
                               None if passthrough else provider.stream_parser())
        encoder = ctx.format.stream_encoder(ctx.summary, ctx.request_id)
        # the upstream is read by its own task, so a client that goes away (which cancels
        # this generator) leaves the upstream read intact for _drain to finish
        pump: _Pump | None = None  # made when the first chunk did not hold the whole stream
        end_reason = "eof"
        first_token_ms: int | None = None
        client_gone = False
        try:
            chunk: bytes | None = first
            while chunk is not None:
                out = reader.feed(chunk, encoder)
                if out:
                    if first_token_ms is None:
                        first_token_ms = int((time.perf_counter() - ctx.started) * 1000)
                    yield b"".join(out)
                if reader.done:
                    end_reason = "done"
                    break
                if pump is None:
                    pump = _Pump(iterator)
                async with asyncio.timeout(idle):
                    chunk = await pump.next()
            tail = reader.trailer()
            if end_reason != "done":
                tail += encoder.error(GatewayError(502, "upstream stream ended early", code="stream_eof",
                                                   upstream=True))
            elif reader.filt is None:  # converted: the encoder closes the stream its own way
                tail += encoder.finish(reader.usage)
            if tail:
                yield tail
        except TimeoutError:
            end_reason = "timeout"
            yield encoder.error(GatewayError(504, "upstream stream went idle", code="stream_timeout",
                                             upstream=True))
        except GatewayError as err:
            end_reason = "upstream_error"
            yield encoder.error(err)
        except (UpstreamTransportError, SSEError) as exc:
            # a connection closed mid-body is the upstream ending early (eof)
            end_reason = "eof" if getattr(exc, "eof", False) else "upstream_error"
            log.warning("stream from channel %s broke: %s", ctx.channel.id if ctx.channel else 0, type(exc).__name__)
            yield encoder.error(GatewayError(502, "upstream stream broke", code="stream_broken", upstream=True))
        except (asyncio.CancelledError, GeneratorExit):
            end_reason = "client_gone"
            client_gone = not reader.done
            raise
        finally:
            if client_gone and self.gw.settings.client_gone_drain_seconds > 0:
                # read the rest on the side so the bill uses the upstream's own usage
                self.gw.spawn(self._drain(ctx, resp, pump or _Pump(iterator), reader, first_token_ms))
            else:
                if pump is not None:
                    pump.cancel()
                self._settle(ctx, reader.usage, end_reason=end_reason, output_chars=reader.output_chars,
                             first_token_ms=first_token_ms)
                self.gw.spawn(resp.aclose())

    async def _drain(self, ctx: RelayContext, resp: UpstreamResponse, pump: _Pump, reader: _StreamReader,
                     first_token_ms: int | None) -> None:
        try:
            async with asyncio.timeout(self.gw.settings.client_gone_drain_seconds):
                while not reader.done:
                    chunk = await pump.next()
                    if chunk is None:
                        break
                    reader.feed(chunk, None)
        except (TimeoutError, GatewayError, UpstreamTransportError, SSEError):
            pass
        finally:
            pump.cancel()
            self._settle(ctx, reader.usage, end_reason="client_gone", output_chars=reader.output_chars,
                         first_token_ms=first_token_ms)
            await resp.aclose()

    # ---- settlement ----------------------------------------------------------------------
    def _settle(self, ctx: RelayContext, usage: Usage | None, *, end_reason: str, output_chars: int,
                first_token_ms: int | None = None) -> None:
        """Synchronous, so it runs even in the ``finally`` of a cancelled stream."""
        reservation = ctx.reservation
        if reservation is None or reservation.settled:
            return
        price = ctx.price or Price()
        usage_source = "upstream"
        if usage is None:
            # no usage from upstream: bill only what was observed (never error text);
            # the prompt only if the upstream got as far as answering
            usage_source = "estimated"
            out_tokens = (output_chars + 3) // 4 if output_chars else 0
            # ~4 characters a token: a neutral estimate (the reservation's errs high; a bill must not)
            usage = Usage(input_tokens=max(1, ctx.summary.prompt_chars // 4) if out_tokens else 0,
                          output_tokens=out_tokens)
        quota = usage_quota(price, usage)
        principal = ctx.principal
        channel = ctx.channel
        elapsed = time.perf_counter() - ctx.started
        other: dict[str, Any] = {
            "latency_ms": int(elapsed * 1000),  # use_time is whole seconds, as new-api's column
            "model_ratio": price.model_ratio,
            "group_ratio": price.group_ratio,
            "completion_ratio": price.completion_ratio,
            "cache_tokens": usage.cache_read_tokens,
            "cache_ratio": price.cache_ratio,
            "cache_write_tokens": usage.cache_write_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
            "request_path": ctx.path,
            "end_reason": end_reason,
            "usage_source": usage_source,
            "admin_info": {"use_channel": list(ctx.tried)},
        }
        if price.model_price is not None:
            other["model_price"] = price.model_price
        if first_token_ms is not None:
            other["frt"] = first_token_ms
        if ctx.upstream_model and ctx.upstream_model != ctx.model:
            other["is_model_mapped"] = True
            other["upstream_model_name"] = ctx.upstream_model
        entry = LogEntry(
            user_id=principal.user.id, username=principal.user.username,
            token_id=principal.token.id if principal.token else 0,
            token_name=principal.token.name if principal.token else "",
            model_name=ctx.model, quota=quota, prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens, use_time=int(elapsed),
            is_stream=ctx.summary.stream, channel_id=channel.id if channel else 0, group=principal.group,
            request_id=ctx.request_id, other=other,
        )
        reservation.settle(quota, entry if self.gw.snapshot.options.log_consume else None,
                           channel.id if channel else 0)

    def _fail(self, ctx: RelayContext, err: GatewayError) -> None:
        """Refund the reservation; record an error log row (type 5)."""
        reservation = ctx.reservation
        if reservation is None or reservation.settled:
            return
        principal = ctx.principal
        entry = LogEntry(
            user_id=principal.user.id, username=principal.user.username,
            token_id=principal.token.id if principal.token else 0,
            token_name=principal.token.name if principal.token else "", model_name=ctx.model, quota=0,
            prompt_tokens=0, completion_tokens=0, use_time=int(time.perf_counter() - ctx.started),
            is_stream=ctx.summary.stream, channel_id=ctx.channel.id if ctx.channel else 0,
            group=principal.group, request_id=ctx.request_id, type=m.LOG_ERROR, content=err.message,
            other={"status_code": err.status, "error_code": err.code, "error_type": err.type,
                   "request_path": ctx.path, "admin_info": {"use_channel": list(ctx.tried)}},
        )
        reservation.refund(entry)


class _Pump:
    """Reads the upstream in its own task into a small queue (backpressure kept)."""

    __slots__ = ("_queue", "_task")

    def __init__(self, iterator: AsyncIterator[bytes]) -> None:
        self._queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue(maxsize=8)
        self._task = asyncio.ensure_future(self._run(iterator))

    async def _run(self, iterator: AsyncIterator[bytes]) -> None:
        try:
            async for chunk in iterator:
                await self._queue.put(chunk)
            await self._queue.put(None)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # handed to the reader, raised there
            await self._queue.put(exc)

    async def next(self) -> bytes | None:
        """The next chunk, or None at the end of the body."""
        item = await self._queue.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self) -> None:
        self._task.cancel()


class _StreamReader:
    """Splits upstream SSE bytes into events and reads them: forwarded as they are
    (same format, ``filt``) or converted (``parser``); usage and output size on the side."""

    __slots__ = ("filt", "parser", "splitter", "_usage", "_chars")

    def __init__(self, filt: PassthroughStream | None, parser: Any) -> None:
        self.filt = filt
        self.parser = parser
        self.splitter = SSESplitter()
        self._usage: Usage | None = None
        self._chars = 0

    @property
    def done(self) -> bool:
        return bool(self.filt.done if self.filt is not None else self.parser.done)

    @property
    def usage(self) -> Usage | None:
        return self.filt.usage if self.filt is not None else self._usage

    @property
    def output_chars(self) -> int:
        return self.filt.output_chars if self.filt is not None else self._chars

    def trailer(self) -> bytes:
        return self.filt.trailer() if self.filt is not None else b""

    def feed(self, chunk: bytes, encoder: StreamEncoder | None) -> list[bytes]:
        """Bytes for the client (none when ``encoder`` is None: draining)."""
        out: list[bytes] = []
        filt = self.filt
        for raw, event, data in self.splitter.feed(chunk):
            if filt is not None:
                if filt.feed(event, data):
                    out.append(raw)
                if filt.error is not None:
                    raise filt.error
                continue
            try:
                events = self.parser.feed(event, data)
            except (ValueError, TypeError, KeyError, AttributeError):  # incl. JSON errors
                raise GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body",
                                   upstream=True) from None
            for ev in events:
                if isinstance(ev, UsageEvent):
                    if self._usage is None:
                        self._usage = Usage()
                    self._usage.merge(ev.usage)
                    continue
                if isinstance(ev, StreamError):
                    raise GatewayError(502, ev.message, type=ev.type, code=ev.code, upstream=True)
                if isinstance(ev, TextDelta | ReasoningDelta):
                    self._chars += len(ev.text)
                elif isinstance(ev, ToolCallDelta):
                    self._chars += len(ev.arguments) + len(ev.name or "")
                if encoder is not None:
                    out.append(encoder.encode(ev))
        return out


async def read_json_body() -> tuple[bytes, dict[str, Any]]:
    """The current request's body as bytes and as a JSON object; 400 when it is not one.
    For plugin routes too (e.g. a format's token-counting endpoint)."""
    try:
        # not request.get_data(): on 3.11 its wait_for costs a task per request
        async with asyncio.timeout(request.body_timeout):
            raw = await request.body
    except TimeoutError:
        raise GatewayError(408, "timed out reading the request body", code="read_request_body_failed") from None
    try:
        body = jsonutil.loads(raw)
    except jsonutil.JSONDecodeError:
        raise bad_request("request body is not valid JSON", code="bad_request_body") from None
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object", code="bad_request_body")
    return raw, body


def check_model_allowed(principal: Principal, model: str) -> None:
    """403 when the caller's API key is limited to other models."""
    token = principal.token
    if token is not None and token.model_limits is not None and model not in token.model_limits:
        raise GatewayError(403, f"this API key may not use model {model}", code="access_denied")


def _client_ip() -> str:
    return request.remote_addr or ""


def _apply_header_override(req: UpstreamRequest, override: dict[str, str], key: str) -> None:
    for name, value in override.items():
        req.headers[name] = value.replace("{api_key}", key)


__all__ = ["Relay", "check_model_allowed", "new_request_id", "read_json_body"]
