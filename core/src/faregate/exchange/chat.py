"""The ``chat`` endpoint kind: a conversation turn (OpenAI chat completions, Anthropic
messages, any format that maps onto the canonical chat model), regular or streamed,
passed through when client and channel speak the same format, converted otherwise.

The same operation serves conversation endpoints that some providers offer natively at
a path of their own (a :class:`NativeEndpoint`, e.g. OpenAI's Responses API): channels
that serve it get the client's request as it is, every other chat channel gets it
converted through the canonical model."""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from faregate import jsonutil
from faregate.canonical import ReasoningPart, TextPart, ToolCallPart, Usage
from faregate.contracts import (
    InboundFormat,
    PassthroughStream,
    Provider,
    RequestSummary,
    UpstreamRequest,
    UpstreamTarget,
)
from faregate.contracts.inbound import InboundRequest, Outcome
from faregate.errors import GatewayError
from faregate.exchange import recount
from faregate.exchange.attempts import AttemptFailed
from faregate.exchange.exchange import request_id_headers
from faregate.exchange.streaming import open_stream, stream_answer
from faregate.exchange.system_prompt import apply_system_prompt, note_log
from faregate.upstream import UpstreamResponse, UpstreamTransportError

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange

STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class NativeEndpoint(Protocol):
    """A conversation endpoint some providers serve in the client's own format at a path
    of their own (OpenAI's Responses API on OpenAI channels). Its channels get the
    client's body (the model mapped) and their answer goes back unchanged, read on the
    side for billing."""

    #: the endpoint kind, as providers declare it in :attr:`Provider.endpoints`
    endpoint: str

    def serves(self, provider: Provider, channel_type: int) -> bool:
        """Whether a channel of this provider and type serves the endpoint natively."""
        ...

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget) -> UpstreamRequest:
        ...

    def read_usage(self, body: bytes) -> tuple[Usage | None, int]:
        """The usage of a regular answer and its output size in characters (billed when it
        has no usage); raise ``GatewayError`` (``upstream=True``) when it is no answer."""
        ...

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        """Reads a streamed answer on the side while its events go to the client unchanged."""
        ...


class ChatOperation:
    """One attempt of a conversation turn: build the upstream request, read its answer.

    With a ``native`` endpoint, the channels that serve it natively get the request as
    the client sent it; the other chat channels get it converted (none when ``convert``
    is False: a request that needs what only the native endpoint offers)."""

    def __init__(self, native: NativeEndpoint | None = None, *, convert: bool = True) -> None:
        self.native = native
        self.convert = convert
        self.endpoint = native.endpoint if native is not None else "chat"

    def serves(self, provider: Provider, channel_type: int) -> bool:
        native = self.native
        if native is not None and native.serves(provider, channel_type):
            return True
        return self.convert and provider.serves("chat", channel_type)

    def native_for(self, ex: Exchange, provider: Provider) -> NativeEndpoint | None:
        """The native endpoint when this attempt's channel serves it (and is not set to convert)."""
        native, channel = self.native, ex.channel
        if native is None or channel is None or channel.setting.get("force_convert"):
            return None
        return native if native.serves(provider, channel.type) else None

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        native = self.native_for(ex, provider) if self.native is not None else None  # chat: one check
        if ex.channel is not None and ex.channel.features.system_prompt:
            apply_system_prompt(ex, as_sent=native is not None or passthrough)
        assert ex.summary is not None
        if ex.summary.output_cap is not None:
            apply_output_cap(ex, ex.summary.output_cap, as_sent=native is not None or passthrough)
        if native is not None:
            return native.build(ex, provider, target)
        if passthrough:
            return provider.build_passthrough(ex.body, ex.raw, target, ex.summary)
        return provider.build_request(ex.canonical(), target)

    async def finish(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        assert ex.summary is not None
        native = self.native_for(ex, provider) if self.native is not None else None
        if not ex.summary.stream:
            return await self._regular(ex, provider, resp, passthrough, native)
        if native is not None:
            return await stream_outcome(ex, provider, resp, True, native.passthrough_stream(ex.summary))
        return await stream_outcome(ex, provider, resp, passthrough)

    async def _regular(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool,
                       native: NativeEndpoint | None) -> Outcome:
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
        output_chars = 0
        try:
            if native is not None:
                usage, output_chars = native.read_usage(body)
                out = body
            elif passthrough:
                usage = provider.passthrough_usage(body)
                out = body
            else:
                assert ex.summary is not None
                response = provider.parse_response(body)
                usage = response.usage
                out = jsonutil.dumps(ex.format.render_reply(response, ex.summary))
            if usage is None and native is None:  # no usage reported: bill the answer we saw (estimated)
                response = response or provider.parse_response(body)
        except GatewayError as err:
            if not err.upstream:
                raise
            raise AttemptFailed(err) from None
        if usage is None:
            texts: list[str] = []
            if response is not None:
                texts = [p.text if isinstance(p, TextPart | ReasoningPart) else p.arguments
                         for p in response.message.content if isinstance(p, TextPart | ReasoningPart | ToolCallPart)]
                output_chars = sum(len(text) for text in texts)
            if output_chars:  # billed on the gateway's count: exact where a tokenizer knows the model
                await recount.prepare(ex, texts)
        ex.settle(usage, end_reason="done", output_chars=output_chars)
        return Outcome(body=out, headers=request_id_headers(ex.request_id))


def apply_output_cap(ex: Exchange, tokens: int, as_sent: bool) -> None:
    """Send a request whose client set no output bound with the one admission reserved
    (``tokens`` per answer): in the client's own body when it goes ``as_sent`` (pass-through,
    a native endpoint; its format's field), else in the canonical request, whichever
    provider renders it. The log row says so (``output_cap``)."""
    if as_sent:
        body = ex.format.add_output_cap(ex.body, tokens)
        if body is not None:
            # the bound spliced into the client's bytes (a new key) rather than the body re-encoded
            ex.body, ex.raw = body, jsonutil.amended(ex.raw, ex.body, body)
    else:
        request = ex.canonical()
        if request.max_tokens is None:
            ex.set_canonical(dataclasses.replace(request, max_tokens=tokens))
    note_log(ex, output_cap=tokens)


async def stream_outcome(ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool,
                         filt: PassthroughStream | None = None) -> Outcome:
    """An upstream's streamed 200 as the client's outcome: read to its first bytes (a
    failure before them raises :class:`AttemptFailed`, so another channel may answer),
    then relayed and settled however it ends. Chat's way, and any other endpoint's whose
    stream is the provider's (same-format) or converts through canonical events (legacy
    completions, say). ``filt`` reads a passed-through stream instead of the provider's
    own reader (a native endpoint's events)."""
    opened = await open_stream(ex, provider, resp, passthrough, filt)
    headers = {**STREAM_HEADERS, **request_id_headers(ex.request_id)}
    return Outcome(content_type=ex.format.stream_content_type, headers=headers,
                   stream=stream_answer(ex, resp, opened))


CHAT = ChatOperation()


class ChatDriver:
    """Routes of a conversation kind (``chat`` by default): authenticate, read,
    summarize, admit, relay with the kind's operation."""

    def __init__(self, kind: str = "chat", operation: ChatOperation = CHAT) -> None:
        self.kind = kind
        self.operation = operation

    def operation_for(self, ex: Exchange) -> ChatOperation:
        """The operation that relays this request (the kind's one, unless a subclass
        chooses by what the summary says)."""
        return self.operation

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raw, body = await ex.read_json()
        return await self.relay_json(ex, raw, body)

    async def relay_json(self, ex: Exchange, raw: bytes, body: dict[str, Any]) -> Outcome:
        """The rest once the caller is known and the body read (``raw`` its bytes, forwarded
        as they are to a same-format channel): summarize, admit, relay."""
        summary = await ex.work_on_body(raw, ex.format.summarize, body, ex.request)
        ex.begin(summary, body, raw)
        # should the upstream report no usage, its bill re-runs this estimate exactly
        recount.offer_exact_recount(ex, partial(_prompt_tokens, ex.format, body, ex.request), len(raw))
        operation = self.operation_for(ex)
        await ex.admit(operation)
        return await ex.relay(operation)


def _prompt_tokens(fmt: InboundFormat, body: dict[str, Any], request: InboundRequest) -> int:
    return fmt.summarize(body, request).prompt_tokens
