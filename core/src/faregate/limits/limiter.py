"""The relay's rate limits: which limits apply to a caller, their one check at admission,
and what the settled answer changes.

- new-api's model request rate limit, per user (every key of the user counts together):
  ``ModelRequestRateLimitCount`` requests (failed ones included) and
  ``ModelRequestRateLimitSuccessCount`` successful ones per ``…DurationMinutes``, or the
  caller's group's pair from ``ModelRequestRateLimitGroup``.

The caller's limits are read from the options and the snapshot (no database); a caller no
limit applies to costs nothing more (no store call). A refusal is a 429 carrying what the
limit says (:class:`~faregate.errors.RateLimitInfo`), which each format renders in its
vendor's headers, and ``Retry-After``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from faregate.errors import GatewayError, RateLimitInfo
from faregate.limits.store import GCRA, LOG, RECORD, Check, MemoryStore, Store, Update, Verdict

if TYPE_CHECKING:
    from faregate.limits.options import LimitOptions
    from faregate.principals import Principal

log = logging.getLogger("faregate.limits")

PREFIX = "faregate:limit:"


@dataclass(slots=True)
class Ticket:
    """An admitted request's limits, for its settlement: the checks it passed, the request's
    id (its lease's name) and the tokens estimated at admission."""

    checks: list[Check]
    member: str
    estimate: int = 0
    #: which check says what: the success log (new-api's success count)
    success: Check | None = None
    done: bool = False


@dataclass(slots=True)
class _Reason:
    """What a check's refusal tells the client."""

    message: str
    tokens: bool = False


@dataclass(slots=True)
class Limiter:
    """One per worker. ``store``: memory, or Redis (shared by every worker and node)."""

    store: Store = field(default_factory=MemoryStore)
    #: told of each refusal: the limit's name (metrics)
    listeners: list[Callable[[str], None]] = field(default_factory=list)
    _pending: list[Update] = field(default_factory=list)
    _flushing: asyncio.Task[None] | None = None

    async def admit(self, principal: Principal, options: LimitOptions, member: str, estimate: int) -> Ticket | None:
        """Check the caller's limits for one more request of ``estimate`` tokens; the ticket to
        settle with, None when no limit applies; a 429 :class:`GatewayError` when one refuses."""
        if principal.via == "session":
            return None  # the playground: new-api limits its /v1 and Gemini routes, not /pg
        checks: list[Check] = []
        reasons: list[_Reason] = []
        success: Check | None = None
        if options.enabled:
            count, success_count = options.user_limits(principal.group)
            window = options.window_minutes * 60_000
            user = principal.user.id
            if success_count > 0:
                success = Check(f"{PREFIX}mrs:{user}", LOG, success_count, window)
                checks.append(success)
                reasons.append(_Reason(f"您已达到请求数限制：{options.window_minutes}分钟内最多请求{success_count}次"))
            if count > 0:
                checks.append(Check(f"{PREFIX}mr:{user}", GCRA, count, window))
                reasons.append(_Reason(f"您已达到总请求数限制：{options.window_minutes}分钟内最多请求{count}次，"
                                       "包括失败次数，请检查您的请求是否正确"))
        if not checks:
            return None
        verdict = await self.store.admit(checks, member)
        if not verdict.admitted:
            reason = reasons[verdict.refused]
            for listener in self.listeners:
                listener("tokens" if reason.tokens else "requests")
            raise GatewayError(429, reason.message, type="new_api_error", code="rate_limit_exceeded",
                               retry_after=max(0.001, verdict.wait_ms / 1000),
                               rate_limit=_info(checks, reasons, verdict))
        return Ticket(checks, member, estimate, success)

    def settle(self, ticket: Ticket, status: int, tokens: int | None) -> None:
        """The answer to an admitted request ended with ``status``, ``tokens`` used (None:
        unknown, the estimate stands). Never waits: a shared store is written in the background."""
        if ticket.done:
            return
        ticket.done = True
        updates: list[Update] = []
        if ticket.success is not None and status < 400:
            check = ticket.success
            updates.append(Update(check.key, RECORD, check.limit, check.window_ms))
        if not updates:
            return
        if isinstance(self.store, MemoryStore):
            self.store.apply(updates)
            return
        self._pending.extend(updates)
        if self._flushing is None:
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        """Send every pending update, in batches while more arrive (one round trip per batch)."""
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                await self.store.settle(batch)
        finally:
            self._flushing = None

    async def aclose(self) -> None:
        if self._flushing is not None:
            await self._flushing
        await self.store.aclose()


def _info(checks: list[Check], reasons: list[_Reason], verdict: Verdict) -> RateLimitInfo:
    """The headers' numbers: the refused limit, and the other kind's (requests or tokens) when
    the caller has one."""
    def pick(tokens: bool) -> int | None:
        if reasons[verdict.refused].tokens == tokens:
            return verdict.refused
        return next((n for n, reason in enumerate(reasons) if reason.tokens == tokens), None)

    def part(n: int | None) -> tuple[int | None, int | None, float | None]:
        if n is None:
            return None, None, None
        wait = verdict.wait_ms if n == verdict.refused else 0
        return checks[n].limit, verdict.remaining[n], max(wait, verdict.reset_ms[n]) / 1000

    return RateLimitInfo(*part(pick(False)), *part(pick(True)))
