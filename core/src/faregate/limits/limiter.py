"""The relay's rate limits: which limits apply to a caller, their one check at admission,
and what the settled answer changes.

- new-api's model request rate limit, per user (every key of the user counts together):
  ``ModelRequestRateLimitCount`` requests (failed ones included) and
  ``ModelRequestRateLimitSuccessCount`` successful ones per ``…DurationMinutes``, or the
  caller's group's pair from ``ModelRequestRateLimitGroup``.
- Per key (LiteLLM's names): ``rpm_limit`` requests and ``tpm_limit`` tokens per minute,
  ``max_parallel_requests`` at once; the key's own, or its group's from ``KeyRateLimitGroup``,
  the lower of the two when both are set. Tokens are estimated at admission (the prompt and the
  output bound the client set) and corrected by the answer's count when it settles.

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
from faregate.limits.options import KEY_LIMITS
from faregate.limits.store import ADJUST, GCRA, LEASE, LOG, RECORD, RELEASE, Check, MemoryStore, Store, Update, Verdict

if TYPE_CHECKING:
    from faregate.limits.options import LimitOptions
    from faregate.principals import Principal

log = logging.getLogger("faregate.limits")

PREFIX = "faregate:limit:"
MINUTE_MS = 60_000
#: how long a request holds its slot under max_parallel_requests at most: a worker that dies
#: mid-request cannot keep it longer (longer than any answer a relay waits for)
LEASE_MS = 3_600_000
#: seconds to connect to Redis or wait for its answer before the limits fail open
REDIS_TIMEOUT = 0.5


@dataclass(slots=True)
class Ticket:
    """An admitted request's limits, for its settlement: the checks it passed, the request's
    id (its lease's name) and the tokens estimated at admission."""

    checks: list[Check]
    member: str
    estimate: int = 0
    #: which check says what: the success log (new-api's success count), the tokens per
    #: minute (corrected by the answer's count), the parallel requests' lease (given back)
    success: Check | None = None
    tokens: Check | None = None
    lease: Check | None = None
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
    #: told of each refusal: ``requests`` or ``tokens`` (metrics)
    listeners: list[Callable[[str], None]] = field(default_factory=list)
    #: told of each request let through because the shared store did not answer (metrics)
    failures: list[Callable[[], None]] = field(default_factory=list)
    _pending: list[Update] = field(default_factory=list)
    _flushing: asyncio.Task[None] | None = None

    @staticmethod
    def applies(principal: Principal, options: LimitOptions) -> bool:
        """Whether any limit may apply to the caller (no await, nothing built when none does)."""
        if principal.via == "session":
            return False  # the playground: new-api limits its /v1 and Gemini routes, not /pg
        if options.enabled or options.key_defaults:
            return True
        token = principal.token
        return token is not None and bool(token.rpm_limit or token.tpm_limit or token.max_parallel_requests)

    async def admit(self, principal: Principal, options: LimitOptions, member: str, estimate: int) -> Ticket | None:
        """Check the caller's limits for one more request of ``estimate`` tokens; the ticket to
        settle with, None when no limit applies; a 429 :class:`GatewayError` when one refuses.
        The caller has found that :meth:`applies` (admission tests it to skip the await)."""
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
        token = principal.token
        tokens = lease = None
        if token is not None:
            defaults = options.key_defaults.get(principal.group) if options.key_defaults else None
            rpm, tpm, parallel = (_stricter(getattr(token, name), defaults.get(name, 0) if defaults else 0)
                                  for name in KEY_LIMITS)
            if rpm:
                checks.append(Check(f"{PREFIX}rpm:{token.id}", GCRA, rpm, MINUTE_MS))
                reasons.append(_Reason(f"rate limit reached for this API key: {rpm} requests per minute"))
            if tpm:
                # a request estimated over the whole limit waits for a full minute's budget
                tokens = Check(f"{PREFIX}tpm:{token.id}", GCRA, tpm, MINUTE_MS, min(max(1, estimate), tpm))
                checks.append(tokens)
                reasons.append(_Reason(f"rate limit reached for this API key: {tpm} tokens per minute", tokens=True))
            if parallel:
                lease = Check(f"{PREFIX}par:{token.id}", LEASE, parallel, LEASE_MS)
                checks.append(lease)
                reasons.append(_Reason(f"rate limit reached for this API key: {parallel} requests at once"))
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
        return Ticket(checks, member, estimate, success, tokens, lease)

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
        if ticket.tokens is not None and tokens is not None and tokens != ticket.tokens.cost:
            check = ticket.tokens
            updates.append(Update(check.key, ADJUST, check.limit, check.window_ms, tokens - check.cost))
        if ticket.lease is not None:
            check = ticket.lease
            updates.append(Update(check.key, RELEASE, check.limit, check.window_ms, member=ticket.member))
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

    @classmethod
    def from_settings(cls, redis_url: str, like: Limiter | None = None) -> Limiter:
        """Shared through Redis at ``redis_url`` (with short timeouts: a hung Redis must not
        hold requests), else this process's memory. With ``like``, the new limiter tells that
        one's listeners and failures (the metrics attached before the gateway started)."""
        listeners = like.listeners if like is not None else []
        failures: list[Callable[[], None]] = like.failures if like is not None else []
        if not redis_url:
            return cls(listeners=listeners, failures=failures)
        import redis.asyncio as aioredis

        from faregate.limits.redis_store import RedisStore

        client = aioredis.from_url(redis_url, socket_connect_timeout=REDIS_TIMEOUT, socket_timeout=REDIS_TIMEOUT)
        return cls(RedisStore(client, failures), listeners=listeners, failures=failures)


def _stricter(own: int, group: int) -> int:
    """The lower of two limits, 0 meaning none: a key can tighten its group's limit, not lift it."""
    return min(own, group) if own and group else own or group


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
