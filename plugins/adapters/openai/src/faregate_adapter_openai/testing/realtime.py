"""The fake OpenAI's Realtime API: ``GET /v1/realtime?model=…`` upgraded to a WebSocket
that speaks the GA protocol (the events of the official spec's ``RealtimeServerEvent*``
schemas; every client event is checked against ``RealtimeClientEvent`` and a violation
recorded as the fake's other schema violations, and answered with an ``error`` event).

What it does, deterministically:

* ``session.created`` first; ``session.update`` merges and answers ``session.updated``;
* ``conversation.item.create`` (user text or audio), ``input_audio_buffer.append`` /
  ``commit`` / ``clear`` build the conversation;
* ``response.create`` answers :data:`REPLY_TEXT`: as ``response.output_text.delta`` events
  (output modality ``text``) or as :data:`REPLY_AUDIO_SECONDS` of PCM16 audio in
  ``response.output_audio.delta`` events with the text as transcript deltas (``audio``,
  the session's default), then ``response.done`` with its ``usage``: text at one token
  per four characters, user audio 10 tokens a second, assistant audio 20 (OpenAI's rates),
  what an earlier response already read counted as cached;
* ``response.cancel`` stops the response in progress: its ``response.done`` is
  ``cancelled``, with the usage of what it produced.

A session opened with ``beta=True`` (Azure's preview path) speaks the beta protocol instead
(:mod:`.realtime_beta`): its events renamed, and what only a GA client sends refused with
the preview service's ``unknown_parameter`` error, recorded as a violation.

A test steers it through :class:`RealtimeKnobs` (``fake.realtime``): hold a response after
its first delta until an event is set, drop the TCP connection after some deltas, report a
given usage or a long answer cut at its bound, answer another text (one delta a word: a long
word makes a big frame), start a response on each committed audio turn (server VAD), echo
the credential it was given (a careless upstream), and read what each connection received
(:attr:`RealtimeKnobs.sessions`). HTTP-level faults (a queued ``status`` fault, a wrong key)
refuse the upgrade as they refuse any request.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from faregate.testing.fake_server import Request, Response
from faregate.testing.fake_websocket import FakeWebSocket, is_upgrade, upgrade
from faregate_adapter_openai.testing import realtime_beta
from faregate_adapter_openai.testing.errors import error_body

if TYPE_CHECKING:
    from faregate_adapter_openai.testing.server import FakeOpenAI

PATH = "/v1/realtime"
REPLY_TEXT = "Hello from the fake realtime model."
#: the assistant's audio per response: PCM16 mono at 24 kHz, sent in 0.1 s deltas
REPLY_AUDIO_SECONDS = 0.5
PCM_BYTES_PER_SECOND = 48_000
AUDIO_CHUNK = PCM_BYTES_PER_SECOND // 10
USER_AUDIO_TOKENS_PER_SECOND = 10
ASSISTANT_AUDIO_TOKENS_PER_SECOND = 20


def text_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def reply_audio() -> bytes:
    """The assistant's audio: a deterministic PCM16 pattern."""
    size = int(REPLY_AUDIO_SECONDS * PCM_BYTES_PER_SECOND)
    return bytes(i * 7 % 256 for i in range(size))


@dataclass
class SessionRecord:
    """One upgraded connection: how it was opened and the client events it received."""

    query: dict[str, str]
    headers: dict[str, str]
    path: str = PATH
    events: list[dict[str, Any]] = field(default_factory=list)
    closed: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class RealtimeKnobs:
    """What a test may change about the fake's realtime sessions."""

    #: when set, each response waits after its first delta until the event is set
    gate: asyncio.Event | None = None
    #: kill the TCP connection (no close frame) after this many deltas of a response
    drop_after_deltas: int | None = None
    #: the usage a test wants ``response.done`` to report instead of the computed one
    usage: dict[str, Any] | None = None
    #: what each response says instead of :data:`REPLY_TEXT` (one delta per word)
    reply_text: str | None = None
    #: as server VAD with ``create_response`` does: each committed audio turn starts a response
    #: of the upstream's own (no ``response.create``), under the session's bound
    respond_to_commits: bool = False
    #: the output (text) tokens each response reports, whatever it said (a model that writes long
    #: answers), or its bound when smaller (its own ``max_output_tokens``, else the session's),
    #: as OpenAI honours it; a cancelled response too (it was written before the cancel landed)
    output_tokens: int | None = None
    #: a careless upstream: the credential it was given echoed in ``session.created``'s
    #: instructions and in an ``error`` event right after it
    echo_key: bool = False
    sessions: list[SessionRecord] = field(default_factory=list)


@dataclass
class Tokens:
    text: int = 0
    audio: int = 0


async def answer(fake: FakeOpenAI, request: Request, response: Response, model: str | None = None, *,
                 beta: bool = False) -> None:
    """``GET /v1/realtime``: a WebSocket session, or OpenAI's 400 for what is not one.
    ``model``: the session's when the URL names it otherwise (Azure's ``deployment``);
    ``beta``: the session speaks the beta protocol (Azure's preview path)."""
    if not is_upgrade(request):
        return response.send(400, error_body(400, "The Realtime API requires a WebSocket upgrade",
                                             type="invalid_request_error", code=None))
    model = model or request.query.get("model")
    if not model:
        return response.send(400, error_body(400, "Missing required parameter: 'model'.",
                                             type="invalid_request_error", param="model",
                                             code="missing_required_parameter"))
    offered = [p.strip() for p in request.headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    ws = await upgrade(request, response, subprotocol="realtime" if "realtime" in offered else None)
    record = SessionRecord(query=dict(request.query), headers=dict(request.headers), path=request.path)
    fake.realtime.sessions.append(record)
    session = FakeSession(fake, ws, model, record, beta=beta)
    if fake.realtime.echo_key:
        session.session["instructions"] = f"You were called with {request.headers.get('authorization', '')}"
    try:
        await session.run()
    finally:
        record.closed.set()


class FakeSession:
    def __init__(self, fake: FakeOpenAI, ws: FakeWebSocket, model: str, record: SessionRecord, *,
                 beta: bool = False) -> None:
        self.fake = fake
        self.beta = beta
        self.ws = ws
        self.record = record
        self.knobs = fake.realtime
        self.ids = itertools.count(1)
        self.session: dict[str, Any] = {
            "type": "realtime", "object": "realtime.session", "id": self.new_id("sess"), "model": model,
            "output_modalities": ["audio"], "instructions": "", "tools": [], "tool_choice": "auto",
            "max_output_tokens": "inf", "expires_at": 1756324625, "tracing": None, "prompt": None,
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": 24000}, "turn_detection": None},
                      "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin", "speed": 1}}}
        self.conversation = Tokens()
        self.read_before = Tokens()  # what earlier responses read: cached now
        self.audio_buffer = 0  # bytes appended, not committed
        self.last_item: str | None = None
        self.responses: dict[str, asyncio.Task[None]] = {}

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{self.fake.id_prefix}{next(self.ids):06d}"

    async def send(self, event: dict[str, Any]) -> None:
        sent = realtime_beta.to_beta(event) if self.beta else event
        if sent is not None:
            await self.ws.send(orjson.dumps({"event_id": self.new_id("event"), **sent}).decode())

    async def error(self, message: str, *, code: str | None, event_id: str | None = None,
                    param: str | None = None) -> None:
        await self.send({"type": "error", "error": {"type": "invalid_request_error", "code": code,
                                                    "message": message, "param": param, "event_id": event_id}})

    async def run(self) -> None:
        await self.send({"type": "session.created", "session": self.session})
        if self.knobs.echo_key:
            key = self.record.headers.get("authorization", "").removeprefix("Bearer ")
            await self.error(f"Incorrect API key provided: {key}.", code="invalid_api_key")
        try:
            async for message in self.ws:
                await self.handle(message)
        finally:
            for task in self.responses.values():
                task.cancel()
            await asyncio.gather(*self.responses.values(), return_exceptions=True)

    async def handle(self, message: str | bytes) -> None:
        try:
            event = orjson.loads(message)
        except orjson.JSONDecodeError:
            return await self.error("The server could not parse the event: not valid JSON", code="invalid_json")
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return await self.error("The 'type' field is missing.", code="invalid_event")
        self.record.events.append(event)
        client_id = event.get("event_id") if isinstance(event.get("event_id"), str) else None
        refused = realtime_beta.refusal(event) if self.beta else None
        if refused is not None:  # a GA client on the preview path: the preview service's answer
            self.fake.violations.append({"path": self.record.path, "error": refused[0], "json": event})
            return await self.error(refused[0], code="unknown_parameter", event_id=client_id, param=refused[1])
        violation = self.schema_problem(event)
        if violation is not None:
            return await self.error(f"Invalid event: {violation}", code="invalid_event", event_id=client_id)
        kind = event["type"]
        if kind == "session.update":
            self.update_session(event["session"])
            await self.send({"type": "session.updated", "session": self.session})
        elif kind == "conversation.item.create":
            await self.add_item(event["item"])
        elif kind == "input_audio_buffer.append":
            try:
                self.audio_buffer += len(base64.b64decode(event["audio"], validate=True))
            except (binascii.Error, ValueError):
                await self.error("Invalid 'audio'. Expected base64-encoded audio.", code="invalid_value",
                                 event_id=client_id, param="audio")
        elif kind == "input_audio_buffer.commit":
            await self.commit_audio(client_id)
        elif kind == "input_audio_buffer.clear":
            self.audio_buffer = 0
            await self.send({"type": "input_audio_buffer.cleared"})
        elif kind == "response.create":
            rid = self.new_id("resp")
            options = event.get("response") or {}
            modalities = options.get("output_modalities") or self.session["output_modalities"]
            if self.beta and "modalities" in options:
                modalities = realtime_beta.modalities(options["modalities"])
            bound = options.get("max_output_tokens", self.session["max_output_tokens"])  # beta's name too
            self.responses[rid] = asyncio.create_task(self.respond(rid, "audio" in modalities, bound))
        elif kind == "response.cancel":
            await self.cancel(event.get("response_id"), client_id)

    def schema_problem(self, event: dict[str, Any]) -> str | None:
        if not self.fake.validate_requests:
            return None
        from faregate_adapter_openai.testing.schema import request_errors

        schema = realtime_beta.client_schema(event["type"]) if self.beta else "RealtimeClientEvent"
        problem = request_errors(event, schema) if schema else None
        if problem is not None:
            self.fake.violations.append({"path": self.record.path, "error": problem, "json": event})
        return problem

    def update_session(self, update: dict[str, Any]) -> None:
        for key in ("instructions", "output_modalities", "max_output_tokens", "tools", "tool_choice"):
            if key in update:
                self.session[key] = update[key]
        if self.beta and "modalities" in update:
            self.session["output_modalities"] = realtime_beta.modalities(update["modalities"])
        if self.beta and "max_response_output_tokens" in update:
            self.session["max_output_tokens"] = update["max_response_output_tokens"]
        if isinstance(update.get("instructions"), str):
            self.conversation.text += text_tokens(update["instructions"])

    async def add_item(self, item: dict[str, Any]) -> None:
        item_id = item.get("id") or self.new_id("item")
        for part in item.get("content") or ():
            if isinstance(part.get("text"), str):
                self.conversation.text += text_tokens(part["text"])
            if isinstance(part.get("audio"), str):
                seconds = len(base64.b64decode(part["audio"])) / PCM_BYTES_PER_SECOND
                self.conversation.audio += math.ceil(seconds * USER_AUDIO_TOKENS_PER_SECOND)
        stored = {**item, "id": item_id, "object": "realtime.item", "status": "completed"}
        previous, self.last_item = self.last_item, item_id
        await self.send({"type": "conversation.item.added", "previous_item_id": previous, "item": stored})
        await self.send({"type": "conversation.item.done", "previous_item_id": previous, "item": stored})

    async def commit_audio(self, client_id: str | None) -> None:
        if not self.audio_buffer:
            return await self.error("Error committing input audio buffer: buffer too small.",
                                    code="input_audio_buffer_commit_empty", event_id=client_id)
        seconds = self.audio_buffer / PCM_BYTES_PER_SECOND
        self.audio_buffer = 0
        self.conversation.audio += math.ceil(seconds * USER_AUDIO_TOKENS_PER_SECOND)
        item_id = self.new_id("item")
        previous, self.last_item = self.last_item, item_id
        await self.send({"type": "input_audio_buffer.committed", "previous_item_id": previous, "item_id": item_id})
        if self.knobs.respond_to_commits:
            rid = self.new_id("resp")
            audio = "audio" in self.session["output_modalities"]
            self.responses[rid] = asyncio.create_task(self.respond(rid, audio, self.session["max_output_tokens"]))

    async def cancel(self, response_id: Any, client_id: str | None) -> None:
        running = [rid for rid, task in self.responses.items() if not task.done()]
        target = response_id if isinstance(response_id, str) else (running[-1] if running else None)
        if target is None or target not in running:
            return await self.error("Cancellation failed: no active response found", code="response_cancel_not_active",
                                    event_id=client_id)
        self.responses[target].cancel()

    def usage(self, made: Tokens) -> dict[str, Any]:
        if self.knobs.usage is not None:
            return self.knobs.usage
        read = self.conversation
        cached = Tokens(min(self.read_before.text, read.text), min(self.read_before.audio, read.audio))
        return {"total_tokens": read.text + read.audio + made.text + made.audio,
                "input_tokens": read.text + read.audio, "output_tokens": made.text + made.audio,
                "input_token_details": {"text_tokens": read.text, "audio_tokens": read.audio, "image_tokens": 0,
                                        "cached_tokens": cached.text + cached.audio,
                                        "cached_tokens_details": {"text_tokens": cached.text,
                                                                  "audio_tokens": cached.audio, "image_tokens": 0}},
                "output_token_details": {"text_tokens": made.text, "audio_tokens": made.audio}}

    async def respond(self, rid: str, audio: bool, bound: Any = "inf") -> None:
        """One response, event by event, under its output ``bound`` (a number or ``"inf"``);
        cancelled: its ``response.done`` says so."""
        item_id = self.new_id("item")
        modalities = ["audio"] if audio else ["text"]
        base = {"id": rid, "object": "realtime.response", "conversation_id": "conv_" + self.fake.id_prefix,
                "output_modalities": modalities, "max_output_tokens": bound}
        ref = {"response_id": rid, "item_id": item_id, "output_index": 0, "content_index": 0}
        item: dict[str, Any] = {"id": item_id, "object": "realtime.item", "type": "message", "role": "assistant",
                                "status": "in_progress", "content": []}
        said, sent_audio, deltas = "", 0, 0
        status, details = "completed", None
        words = (self.knobs.reply_text or REPLY_TEXT).split(" ")
        try:
            await self.send({"type": "response.created", "response": {**base, "status": "in_progress", "output": []}})
            await self.send({"type": "response.output_item.added", "response_id": rid, "output_index": 0,
                             "item": item})
            await self.send({"type": "conversation.item.added", "previous_item_id": self.last_item, "item": item})
            part = {"type": "audio", "transcript": ""} if audio else {"type": "text", "text": ""}
            await self.send({"type": "response.content_part.added", **ref, "part": part})
            pcm = reply_audio() if audio else b""
            for i, word in enumerate(words):
                piece = word if i == 0 else " " + word
                if audio:
                    chunk = pcm[i * AUDIO_CHUNK:(i + 1) * AUDIO_CHUNK]
                    if chunk:
                        await self.send({"type": "response.output_audio.delta", **ref,
                                         "delta": base64.b64encode(chunk).decode()})
                        sent_audio += len(chunk)
                    await self.send({"type": "response.output_audio_transcript.delta", **ref, "delta": piece})
                else:
                    await self.send({"type": "response.output_text.delta", **ref, "delta": piece})
                said += piece
                deltas += 1
                if self.knobs.drop_after_deltas is not None and deltas >= self.knobs.drop_after_deltas:
                    self.ws.drop()
                    return
                if deltas == 1 and self.knobs.gate is not None:
                    await self.knobs.gate.wait()
                await asyncio.sleep(0)
            if audio:
                await self.send({"type": "response.output_audio.done", **ref})
                await self.send({"type": "response.output_audio_transcript.done", **ref, "transcript": said})
                done_part = {"type": "audio", "transcript": said}
            else:
                await self.send({"type": "response.output_text.done", **ref, "text": said})
                done_part = {"type": "text", "text": said}
            await self.send({"type": "response.content_part.done", **ref, "part": done_part})
        except asyncio.CancelledError:
            status, details = "cancelled", {"type": "cancelled", "reason": "client_cancelled"}
        content = ({"type": "output_audio", "transcript": said} if audio else {"type": "output_text", "text": said})
        item = {**item, "status": "completed" if status == "completed" else "incomplete", "content": [content]}
        made = Tokens(text_tokens(said), math.ceil(sent_audio / PCM_BYTES_PER_SECOND
                                                   * ASSISTANT_AUDIO_TOKENS_PER_SECOND))
        written = self.knobs.output_tokens
        if written is not None:  # a long answer, cut at the bound it was given
            made = Tokens(min(written, bound) if isinstance(bound, int) and not isinstance(bound, bool) else written)
        usage = self.usage(made)
        self.read_before = Tokens(self.conversation.text, self.conversation.audio)
        self.conversation.text += made.text
        self.conversation.audio += made.audio
        with contextlib.suppress(ConnectionError, OSError):
            await self.send({"type": "response.output_item.done", "response_id": rid, "output_index": 0,
                             "item": item})
            await self.send({"type": "conversation.item.done", "previous_item_id": self.last_item, "item": item})
            self.last_item = item_id
            done = {**base, "status": status, "output": [item], "usage": usage}
            if details is not None:
                done["status_details"] = details
            await self.send({"type": "response.done", "response": done})
