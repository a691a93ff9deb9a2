"""Billing a realtime session response by response (docs/openai-endpoints.md#realtime).

* A reservation is sized for a response's worst case: the whole conversation so far read at
  full price (the gateway's estimate, see :meth:`SessionBill.client_event`; its text at four
  times the estimate, a token per byte), plus the response's output bound all as audio or all
  as text, whichever costs more. The bound is the response's own ``max_output_tokens``, else
  the session's, else the model's output limit (``ModelMaxOutputTokens``, else the plugin's
  ``openai_realtime_reserve_output_tokens``), which the gateway then sets on the event it
  forwards (a ``response.create``, a ``session.update`` left at ``"inf"``), so no response
  is billed beyond what was reserved for it.
* A client's ``response.create`` is paid for before it is forwarded: the reservation standing
  for the next response if it covers it, else a new one. When the quota cannot cover it, the
  event is not forwarded and the session ends with a realtime ``error`` event (403
  ``insufficient_user_quota`` or ``pre_consume_token_quota_failed``): however many a client
  sends at once, only those reserved for reach the upstream.
* ``response.created`` gives the response the first reservation paid for ahead (else the
  standing one, for a response the upstream starts itself: server VAD); ``response.done``
  settles it with the response's ``usage`` (one consume row per response), and a new one is
  reserved to stand for the next response. A response the upstream started that nothing
  covers (server VAD beside another) is reserved for then; when the quota cannot cover it,
  it is tracked on an empty reservation, cancelled as the session ends and billed like any
  other (never left unbilled).
* A response cut off before its ``response.done`` (the upstream dropped, the session
  ended) is billed on what was seen of it: its text and transcript characters and audio
  bytes, and the conversation as input (what the previous response read counted as
  cached) only when some output was seen; logged ``usage_source: estimated``.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from dataclasses import dataclass
from typing import Any

from faregate.api import Exchange, GatewayError, Price, Reservation, Usage, estimator, prompt_bound, usage_quota
from faregate_adapter_openai.realtime import protocol as p


@dataclass(slots=True)
class Flight:
    """A response in progress: what pays for it and what was seen of its output."""

    reservation: Reservation
    text_chars: int = 0
    audio_bytes: int = 0


@dataclass(slots=True)
class Conversation:
    """The gateway's estimate of what the next response reads, in tokens."""

    text: int = 0
    audio: int = 0
    instructions: int = 0  # the session's, replaced by each session.update that sets them
    tools: int = 0


class SessionBill:
    def __init__(self, ex: Exchange, standing: Reservation, reserve_output: int, *, beta: bool = False) -> None:
        """``reserve_output``: a response's output bound when neither it nor the session sets
        one (the model's limit); ``beta``: the session speaks the beta protocol (its names)."""
        assert ex.price is not None, "admitted before the session"
        self.ex = ex
        self.price: Price = ex.price
        #: the reservation waiting for the next response (None: none held)
        self.standing: Reservation | None = standing
        #: reservations of the client's response.create events forwarded, for their responses in turn
        self.prepaid: deque[Reservation] = deque()
        self.funding = False  # a response.create's reservation is being taken
        self.flights: dict[str, Flight] = {}
        self.conversation = Conversation()
        self.reserve_output = reserve_output
        self.ceiling = max(p.MAX_RESPONSE_TOKENS, reserve_output)  # no response of the model writes more
        #: the session's bound's name (a response's is max_output_tokens in both protocols)
        self.session_bound = "max_response_output_tokens" if beta else "max_output_tokens"
        self.max_output: int | None = None  # the session's max_output_tokens, when a number
        self.in_rate = p.PCM_BYTES_PER_SECOND
        self.out_rate = p.PCM_BYTES_PER_SECOND
        self.last_input = 0  # the input the previous response read (the upstream's cache holds it)
        #: the session's totals, for its report
        self.total = Usage()
        self.quota = 0
        self.responses = 0

    # ---- sizes ----------------------------------------------------------------------
    def prompt(self) -> Usage:
        c = self.conversation
        return Usage(input_tokens=c.text + c.instructions + c.tools + c.audio, audio_tokens=c.audio)

    def amount(self, output: int | None = None) -> int:
        """What the next response may cost at most, with ``output`` tokens its bound (else the
        session's, else the model's): see the module docstring."""
        out = output or self.max_output or self.reserve_output
        c = self.conversation
        text = prompt_bound(c.text + c.instructions + c.tools)  # a token per byte at most
        prompt = Usage(input_tokens=text + c.audio, audio_tokens=c.audio)
        as_audio = dataclasses.replace(prompt, output_tokens=out, output_audio_tokens=out)
        as_text = dataclasses.replace(prompt, output_tokens=out)
        return max(usage_quota(self.price, as_audio), usage_quota(self.price, as_text))

    # ---- what the client adds -----------------------------------------------------------
    def client_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == p.AUDIO_APPEND:
            audio = event.get("audio")
            if isinstance(audio, str):
                self.add_audio(p.base64_bytes(len(audio)))
        elif kind == p.ITEM_CREATE:
            self.add_item(event.get("item"))
        elif kind == p.SESSION_UPDATE and isinstance(event.get("session"), dict):
            self.update_session(event["session"])
        elif kind == p.RESPONSE_CREATE and isinstance(event.get("response"), dict):
            options = event["response"]
            if isinstance(options.get("instructions"), str):
                self.conversation.text += estimator.text(options["instructions"])
            for item in options.get("input") or ():
                self.add_item(item)

    def add_audio(self, size: int) -> None:
        self.conversation.audio += p.audio_tokens(size, self.in_rate, p.USER_AUDIO_TOKENS_PER_SECOND)

    def add_item(self, item: Any) -> None:
        if not isinstance(item, dict):
            return
        c = self.conversation
        for key in ("output", "arguments"):  # function call outputs and calls
            if isinstance(item.get(key), str):
                c.text += estimator.text(item[key])
        for part in item.get("content") or ():
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                c.text += estimator.text(part["text"])
            if isinstance(part.get("audio"), str):
                self.add_audio(p.base64_bytes(len(part["audio"])))
            if isinstance(part.get("image_url"), str):
                c.text += estimator.IMAGE_TOKENS

    def bound_of(self, value: Any) -> int | None:
        """A ``max_output_tokens`` value as a bound: a number (OpenAI takes up to 4096, no model
        here writes more than :attr:`ceiling`), None for ``"inf"`` or anything else."""
        valid = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return min(value, self.ceiling) if valid else None

    def update_session(self, session: dict[str, Any]) -> None:
        if isinstance(session.get("instructions"), str):
            self.conversation.instructions = estimator.text(session["instructions"])
        if isinstance(session.get("tools"), list):
            self.conversation.tools = estimator.tools(session["tools"])
        for key in ("max_output_tokens", "max_response_output_tokens"):  # GA, beta
            if key in session:  # a number, or "inf": the model's limit
                self.max_output = self.bound_of(session[key])
        audio = session.get("audio")
        if isinstance(audio, dict):  # GA: audio.input.format / audio.output.format
            for side in ("input", "output"):
                config = audio.get(side)
                if isinstance(config, dict) and "format" in config:
                    self.set_rate(side, p.bytes_per_second(config["format"]))
        for side in ("input", "output"):  # beta: input_audio_format / output_audio_format
            if f"{side}_audio_format" in session:
                self.set_rate(side, p.bytes_per_second(session[f"{side}_audio_format"]))

    def set_rate(self, side: str, rate: int) -> None:
        if side == "input":
            self.in_rate = rate
        else:
            self.out_rate = rate

    # ---- what goes upstream -------------------------------------------------------------
    def bounded_session(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """A ``session.update`` (read already) that leaves the session without a numeric bound,
        with the model's limit set (the responses server VAD starts are bounded by it); None
        when it goes as it came."""
        session = event.get("session")
        if self.max_output is not None or not isinstance(session, dict):
            return None
        named = {k: v for k, v in session.items() if k not in ("max_output_tokens", "max_response_output_tokens")}
        return {**event, "session": {**named, self.session_bound: self.reserve_output}}

    async def fund_response(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """Reserve for the response a client's ``response.create`` (read already) asks for,
        before it is forwarded: the reservation standing for the next response when it covers
        it, else a new one (the standing one given back first: the two are never held at
        once). A 403 ``GatewayError`` when the quota cannot cover it (the event must not go).
        Returns the event with the model's bound set when neither it nor the session sets
        one; None when it goes as it came."""
        options = event.get("response")
        options = options if isinstance(options, dict) else {}
        own = self.bound_of(options.get("max_output_tokens"))
        # the session's number applies to a response that names none; "inf" is the model's limit
        inherited = self.max_output if "max_output_tokens" not in options else None
        bound = own or inherited or self.reserve_output
        amount = self.amount(bound)
        standing, self.standing = self.standing, None
        if standing is not None and standing.amount >= amount:
            self.prepaid.append(standing)
        else:
            if standing is not None:
                standing.refund()
            self.funding = True  # no replenishing meanwhile: it would take what this reserves
            try:
                self.prepaid.append(await self.ex.reserve(amount))
            finally:
                self.funding = False
        if own or inherited:
            return None
        return {**event, "response": {**options, "max_output_tokens": bound}}

    # ---- what the upstream answers ----------------------------------------------------
    async def response_created(self, rid: str, *, fund: bool = True) -> GatewayError | None:
        """Give the standing reservation to response ``rid``, or reserve one for it (a
        response started while another runs; ``fund=False``: the session is ending, none is
        tried). The 403 when the quota cannot cover it: the response is tracked all the same,
        on an empty reservation, so that it is cancelled and billed (the session ends)."""
        if rid in self.flights:
            return None
        if self.prepaid:  # a client's response.create, paid for before it went
            reservation: Reservation | None = self.prepaid.popleft()
        else:  # one the upstream started itself (server VAD)
            reservation, self.standing = self.standing, None
        shortfall = None
        if reservation is None:
            try:
                reservation = await self.ex.reserve(self.amount() if fund else 0)
            except GatewayError as err:
                # nothing to hold back: what the upstream bills for it is charged all the same
                reservation, shortfall = await self.ex.reserve(0), err
        self.flights[rid] = Flight(reservation)
        return shortfall

    def delta(self, rid: Any, audio: bool, size: int) -> None:
        flight = self.flights.get(rid) if isinstance(rid, str) else None
        if flight is None:
            return
        if audio:
            flight.audio_bytes += p.base64_bytes(size)
        else:
            flight.text_chars += size

    def response_done(self, rid: str, response: dict[str, Any]) -> None:
        """Settle response ``rid`` with its usage (an estimate of what was seen when it has none)."""
        flight = self.flights.pop(rid, None)
        if flight is None:
            return
        given = response.get("status")
        status = given[:32] if isinstance(given, str) else "completed"
        usage = p.response_usage(response)
        end_reason = "done" if status == "completed" else status
        if usage is None:
            self.settle(rid, flight, self.estimate(flight), end_reason, status, estimated=True)
            return
        self.settle(rid, flight, usage, end_reason, status, estimated=False)
        # what this response read and wrote, the next one reads: its output joins the
        # conversation, and a reported input above the estimate corrects it upwards
        c = self.conversation
        c.text += max(0, usage.input_tokens - self.prompt().input_tokens)
        c.audio += usage.output_audio_tokens
        c.text += usage.output_tokens - usage.output_audio_tokens
        self.last_input = usage.input_tokens

    async def replenish(self) -> None:
        """Reserve for the next response once none stands (nor is paid for ahead); a 403
        ``GatewayError`` when the quota cannot cover it (the session ends)."""
        if self.standing is None and not self.prepaid and not self.funding:
            self.standing = await self.ex.reserve(self.amount())

    # ---- settling ---------------------------------------------------------------------
    def estimate(self, flight: Flight) -> Usage:
        """A response without usage: what was seen of its output, and then the conversation
        it read (the previous response's input counted as cached)."""
        text = estimator.chars(flight.text_chars) if flight.text_chars else 0
        audio = p.audio_tokens(flight.audio_bytes, self.out_rate, p.ASSISTANT_AUDIO_TOKENS_PER_SECOND)
        if not (text or audio):
            return Usage()  # nothing came out: the read is not billed either
        prompt = self.prompt()
        cached = min(self.last_input, prompt.input_tokens)
        return Usage(input_tokens=prompt.input_tokens, cache_read_tokens=cached,
                     audio_tokens=min(prompt.audio_tokens, prompt.input_tokens - cached),
                     output_tokens=text + audio, output_audio_tokens=audio)

    def settle(self, rid: str, flight: Flight, usage: Usage, end_reason: str, status: str, *,
               estimated: bool) -> None:
        if estimated and not usage.total_tokens:  # nothing seen of it: no charge (a per-call price neither)
            flight.reservation.refund()
            return
        self.responses += 1
        session = self.ex.request_id
        # one row per response: its request id is the session's, numbered (ids are unique per row)
        self.ex.settle(usage, end_reason=end_reason, reservation=flight.reservation, estimated=estimated,
                       row_id=f"{session[:54]}-{self.responses}",
                       details={"realtime": True, "realtime_session": session, "response_id": rid[:64],
                                "response_status": status[:32]})
        self.quota += usage_quota(self.price, usage)
        self.total.input_tokens += usage.input_tokens
        self.total.output_tokens += usage.output_tokens

    def close(self, end_reason: str) -> None:
        """The session is over: every response still open is billed on what was seen of
        it, the standing reservation released. Synchronous: safe in a ``finally``."""
        for rid, flight in list(self.flights.items()):
            del self.flights[rid]
            self.settle(rid, flight, self.estimate(flight), end_reason, "interrupted", estimated=True)
        standing, self.standing = self.standing, None
        if standing is not None:
            standing.refund()
        while self.prepaid:  # paid for ahead, never started
            self.prepaid.popleft().refund()
