"""The ``chat`` endpoint kind: a conversation turn (OpenAI chat completions, Anthropic
messages, any format that maps onto the canonical chat model), regular or streamed,
passed through when client and channel speak the same format, converted otherwise."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from faregate import jsonutil
from faregate.canonical import ReasoningPart, TextPart, ToolCallPart
from faregate.contracts import Provider, UpstreamRequest, UpstreamTarget
from faregate.errors import GatewayError
from faregate.exchange.attempts import AttemptFailed
from faregate.exchange.exchange import request_id_headers
from faregate.exchange.inbound import Outcome
from faregate.exchange.streaming import open_stream, stream_answer
from faregate.upstream import UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class ChatOperation:
    """One chat attempt: build the upstream request, read its answer."""

    endpoint = "chat"

    def serves(self, provider: Provider, channel_type: int) -> bool:
        return provider.serves("chat", channel_type)

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        if passthrough:
            assert ex.summary is not None
            return provider.build_passthrough(ex.body, ex.raw, target, ex.summary)
        return provider.build_request(ex.canonical(), target)

    async def finish(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        assert ex.summary is not None
        if not ex.summary.stream:
            return await self._regular(ex, provider, resp, passthrough)
        opened = await open_stream(ex, provider, resp, passthrough)
        headers = {**STREAM_HEADERS, **request_id_headers(ex.request_id)}
        return Outcome(content_type=ex.format.stream_content_type, headers=headers,
                       stream=stream_answer(ex, resp, opened))

    async def _regular(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        """A 200 whose body cannot be read or understood is a failed attempt: nothing
        reached the client yet, so another channel may answer."""
        try:
            body = await resp.aread()
        except UpstreamTransportError:
            raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                             code="read_response_body_failed", upstream=True)) from None
        finally:
            await resp.aclose()
        # the body is in: what follows (conversion, billing) is the gateway's own time
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        response = None
        try:
            if passthrough:
                usage = provider.passthrough_usage(body)
                out = body
            else:
                response = provider.parse_response(body)
                usage = response.usage
                out = jsonutil.dumps(ex.format.render_response(response, ex.model))
            if usage is None:  # the upstream reported no usage: bill the answer we saw (estimated)
                response = response or provider.parse_response(body)
        except GatewayError as err:
            if not err.upstream:
                raise
            raise AttemptFailed(err) from None
        output_chars = 0
        if usage is None and response is not None:
            output_chars = sum(len(p.text) if isinstance(p, TextPart | ReasoningPart)
                               else len(p.arguments) if isinstance(p, ToolCallPart) else 0
                               for p in response.message.content)
        ex.settle(usage, end_reason="done", output_chars=output_chars)
        return Outcome(body=out, headers=request_id_headers(ex.request_id))


CHAT = ChatOperation()


class ChatDriver:
    """Routes of kind ``chat``: authenticate, read, summarize, admit, relay."""

    kind = "chat"

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        if len(raw) > ex.gateway.settings.offload_body_kb * 1024:
            # estimating a big prompt takes a while: not on the event loop
            summary = await asyncio.to_thread(ex.format.summarize, body, ex.request)
        else:
            summary = ex.format.summarize(body, ex.request)
        ex.begin(summary, body, raw)
        await ex.admit()
        return await ex.relay(CHAT)
