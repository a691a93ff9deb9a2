"""Login throttling: fixed-window counters per client IP and per account; and rate limits
(:meth:`LoginThrottle.limit`) for requests that are not guesses but cost something (a mail
sent, a row written), counted apart from failed logins.

An attempt is counted *before* its password is checked (an atomic increment), so
concurrent guesses cannot overshoot the limit, and a locked account refuses the right
password too; a successful login gives its attempt back (the account's count is
cleared, the IP's decremented), so only failures accumulate.

Counters live in this worker's memory, or in Redis when ``FAREGATE_REDIS_URL`` is set
(every worker and node then shares them). If Redis fails at runtime the throttle falls
back to this worker's memory rather than refusing or waving through every login.
"""

from __future__ import annotations

import logging
import math
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from faregate.settings import Settings

log = logging.getLogger("faregate.security")

KEY_PREFIX = "faregate:login:"
#: rate limits' counters: a separate space, so an email sent never counts as a failed login
RATE_PREFIX = "faregate:rate:"


class Counters(Protocol):
    async def hit(self, key: str, window: float) -> tuple[int, float]:
        """Count one more attempt for ``key``; the count in its window and the seconds
        the window has left."""
        ...

    async def give_back(self, key: str) -> None:
        """Undo one attempt (never below zero, never reviving an expired window)."""
        ...

    async def clear(self, key: str) -> None: ...

    async def aclose(self) -> None: ...


class MemoryCounters:
    """One worker's counters: ``key → [count, window end]`` (monotonic clock)."""

    #: expired windows are swept when the table grows past this (a name-spraying flood)
    SWEEP_AT = 10_000

    def __init__(self) -> None:
        self._windows: dict[str, list[float]] = {}
        self._sweep_at = self.SWEEP_AT

    async def hit(self, key: str, window: float) -> tuple[int, float]:
        now = time.monotonic()
        entry = self._windows.get(key)
        if entry is None or entry[1] <= now:
            if len(self._windows) >= self._sweep_at:
                self._sweep(now)
            entry = self._windows[key] = [0, now + window]
        entry[0] += 1
        return int(entry[0]), entry[1] - now

    async def give_back(self, key: str) -> None:
        entry = self._windows.get(key)
        if entry is not None and entry[0] > 0:
            entry[0] -= 1

    async def clear(self, key: str) -> None:
        self._windows.pop(key, None)

    async def aclose(self) -> None:
        self._windows.clear()

    def _sweep(self, now: float) -> None:
        self._windows = {k: v for k, v in self._windows.items() if v[1] > now}
        # amortized: the next sweep waits until the live table has doubled
        self._sweep_at = max(self.SWEEP_AT, 2 * len(self._windows))


# KEYS[1]: the counter. A decrement that never creates a key (DECR on a missing key
# would make one without an expiry) and never goes below zero.
_GIVE_BACK = "local n = redis.call('GET', KEYS[1]) if n and tonumber(n) > 0 then redis.call('DECR', KEYS[1]) end"


class RedisCounters:
    """Counters shared by every worker and node: ``SET NX EX`` opens a window, ``INCR``
    counts in it (one MULTI transaction)."""

    def __init__(self, redis: Redis) -> None:
        self._redis = redis
        self._fallback = MemoryCounters()
        self._failing = False

    async def hit(self, key: str, window: float) -> tuple[int, float]:
        try:
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.set(key, 0, px=max(1, int(window * 1000)), nx=True)
                pipe.incr(key)
                pipe.pttl(key)
                _, count, ttl_ms = await pipe.execute()
            if ttl_ms == -1:  # a key without expiry (written by someone else) would lock forever
                ttl_ms = max(1, int(window * 1000))
                await self._redis.pexpire(key, ttl_ms)
        except Exception:  # redis.RedisError, OSError …: keep throttling, per worker
            self._failed()
            return await self._fallback.hit(key, window)
        self._recovered()
        return int(count), max(0.0, int(ttl_ms) / 1000)

    async def give_back(self, key: str) -> None:
        try:
            await self._redis.eval(_GIVE_BACK, 1, key)
        except Exception:
            self._failed()
            await self._fallback.give_back(key)

    async def clear(self, key: str) -> None:
        try:
            await self._redis.delete(key)
        except Exception:
            self._failed()
            await self._fallback.clear(key)

    async def aclose(self) -> None:
        await self._redis.aclose()

    def _failed(self) -> None:
        if not self._failing:  # once per outage, not once per login of a flood
            log.warning("redis unreachable: login throttling falls back to this worker's counters")
            self._failing = True

    def _recovered(self) -> None:
        if self._failing:
            log.warning("redis reachable again: login throttling is shared again")
            self._failing = False


class LoginThrottle:
    def __init__(self, counters: Counters, *, window: float, per_account: int, per_ip: int) -> None:
        self.counters = counters
        self.window = window
        self.per_account = per_account
        self.per_ip = per_ip

    @classmethod
    def from_settings(cls, settings: Settings) -> LoginThrottle:
        counters: Counters
        if settings.redis_url:
            import redis.asyncio as aioredis

            counters = RedisCounters(aioredis.from_url(settings.redis_url))
        else:
            counters = MemoryCounters()
        return cls(counters, window=float(settings.login_window_seconds),
                   per_account=int(settings.login_max_failures_per_account),
                   per_ip=int(settings.login_max_failures_per_ip))

    @staticmethod
    def account_key(account: str) -> str:
        # unknown names are counted too: a locked-out name must not tell whether it exists
        return KEY_PREFIX + "account:" + account.strip().casefold()

    @staticmethod
    def ip_key(ip: str) -> str:
        return KEY_PREFIX + "ip:" + ip

    async def attempt(self, ip: str, account: str) -> float | None:
        """Count a login attempt. None: go ahead and check the password; a number: the
        seconds until this IP or account may try again (answer 429)."""
        if self.window <= 0:
            return None
        # the IP first: a refused address does not count against the account it tried
        for key, limit in ((self.ip_key(ip), self.per_ip), (self.account_key(account), self.per_account)):
            if limit <= 0:
                continue
            count, left = await self.counters.hit(key, self.window)
            if count > limit:
                return max(1.0, float(math.ceil(left)))
        return None

    async def limit(self, name: str, key: str, limit: int, window: float) -> float | None:
        """Count one request of ``key`` (a client IP, an address) under the rate limit
        ``name``: None while at most ``limit`` in ``window`` seconds, else the seconds
        until the window ends (answer 429). Never given back."""
        if limit <= 0 or window <= 0:
            return None
        count, left = await self.counters.hit(f"{RATE_PREFIX}{name}:{key}", window)
        return max(1.0, float(math.ceil(left))) if count > limit else None

    async def succeeded(self, ip: str, account: str) -> None:
        """The password was right: the attempt was not a guess."""
        if self.window <= 0:
            return
        if self.per_ip > 0:
            await self.counters.give_back(self.ip_key(ip))
        if self.per_account > 0:
            await self.counters.clear(self.account_key(account))

    async def aclose(self) -> None:
        await self.counters.aclose()
