"""Login throttling: fixed-window counters of failed guesses, and rate limits
(:meth:`LoginThrottle.limit`) for requests that are not guesses but cost something (a mail
sent, a row written), counted apart from failed logins.

A guess at an account's secret counts against three counters: the client's address (any
account), the account from that address, and the account from every address together. The
first two refuse the client alone (429), so an attacker's failures lock out the attacker,
not the owner signing in from elsewhere. The third, far higher, bounds the guessing of many
addresses together; past it the account is locked for everyone except a browser that
signed in to it before (a known device, with a failure budget of its own) and a login
finished with a second factor: the login route answers with its second step, never
telling whether the password was right.

An attempt is counted *before* its secret is checked (an atomic increment), so concurrent
guesses cannot overshoot a limit, and a refused client's right password is refused too; a
refused attempt does not count further (a locked-out address cannot push the account
towards its lock). A successful login gives its attempt back (the pair's count is cleared,
the address's and the account's decremented), so only failures accumulate.

An IPv6 client is counted by its /64 network: one host gets a whole /64 to pick addresses
from.

Counters live in this worker's memory, or in Redis when ``FAREGATE_REDIS_URL`` is set
(every worker and node then shares them). If Redis fails at runtime the throttle falls
back to this worker's memory rather than refusing or waving through every login.
:meth:`LoginThrottle.unlock` forgets an account's counters (``faregate admin unlock``).
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from redis.asyncio import Redis

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

    async def clear_prefix(self, prefix: str) -> None:
        """Forget every counter whose key starts with ``prefix`` (no glob characters in it)."""
        ...

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

    async def clear_prefix(self, prefix: str) -> None:
        for key in [k for k in self._windows if k.startswith(prefix)]:
            del self._windows[key]

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
        await self._fallback.clear(key)  # what an outage left there too

    async def clear_prefix(self, prefix: str) -> None:
        try:
            batch: list[bytes] = []
            async for key in self._redis.scan_iter(match=prefix + "*", count=500):
                batch.append(key)
                if len(batch) >= 500:
                    await self._redis.delete(*batch)
                    batch.clear()
            if batch:
                await self._redis.delete(*batch)
        except Exception:
            self._failed()
        await self._fallback.clear_prefix(prefix)

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


@dataclass(frozen=True, slots=True)
class Refusal:
    """An attempt that may not go on: ``wait`` seconds until it may. ``account_locked``:
    the account is over its failures from every address together (the lock a known device
    or a second factor passes), not this client over its own."""

    wait: float
    account_locked: bool = False


class LoginThrottle:
    def __init__(self, counters: Counters, *, window: float, per_account: int, per_ip: int,
                 account_lock: int = 0) -> None:
        self.counters = counters
        self.window = window
        #: failures against one account from one client
        self.per_account = per_account
        #: failures from one client, whatever the account
        self.per_ip = per_ip
        #: failures against one account from every client together (0: no such lock)
        self.account_lock = account_lock

    @staticmethod
    def client_key(ip: str) -> str:
        """Who the client is for counting: its address, or its /64 network for IPv6."""
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return ip
        if isinstance(address, ipaddress.IPv6Address):
            if address.ipv4_mapped is not None:
                return str(address.ipv4_mapped)
            return str(ipaddress.IPv6Network((address, 64), strict=False))
        return str(address)

    @staticmethod
    def _account(account: str) -> str:
        # unknown names are counted too: a locked-out name must not tell whether it exists
        return account.strip().casefold()

    @classmethod
    def account_key(cls, account: str) -> str:
        return KEY_PREFIX + "account:" + cls._account(account)

    @classmethod
    def pair_prefix(cls, account: str) -> str:
        # hashed: a fixed-length prefix without glob characters, whatever the name holds
        return KEY_PREFIX + "pair:" + hashlib.sha256(cls._account(account).encode()).hexdigest()[:32] + ":"

    @classmethod
    def pair_key(cls, account: str, ip: str) -> str:
        return cls.pair_prefix(account) + cls.client_key(ip)

    @classmethod
    def ip_key(cls, ip: str) -> str:
        return KEY_PREFIX + "ip:" + cls.client_key(ip)

    @staticmethod
    def device_key(device: str) -> str:
        return KEY_PREFIX + "device:" + device

    async def attempt(self, ip: str, account: str, *, account_wide: bool = True) -> Refusal | None:
        """Count a guess at ``account``'s secret from ``ip``. None: go ahead and check it; a
        :class:`Refusal` otherwise (answer 429, or for a login past the account's lock, see
        :attr:`Refusal.account_locked`). ``account_wide=False``: the account's total is
        neither counted nor checked (a step an attacker could otherwise lock for everyone)."""
        if self.window <= 0:
            return None
        # the client's own limits first: a refused client does not count against the account
        checks = [(self.ip_key(ip), self.per_ip, False), (self.pair_key(account, ip), self.per_account, False)]
        if account_wide:
            checks.append((self.account_key(account), self.account_lock, True))
        for key, limit, locks_account in checks:
            if limit <= 0:
                continue
            count, left = await self.counters.hit(key, self.window)
            if count > limit:
                return Refusal(max(1.0, float(math.ceil(left))), account_locked=locks_account)
        return None

    async def trusted_device(self, device: str) -> bool:
        """Count an attempt of a known device at an account under its lock: True while the
        device stays within ``per_account`` failures (a stolen cookie buys few guesses)."""
        if self.window <= 0 or self.per_account <= 0:
            return True
        count, _ = await self.counters.hit(self.device_key(device), self.window)
        return count <= self.per_account

    async def limit(self, name: str, key: str, limit: int, window: float) -> float | None:
        """Count one request of ``key`` (a client IP, an address) under the rate limit
        ``name``: None while at most ``limit`` in ``window`` seconds, else the seconds
        until the window ends (answer 429). Never given back."""
        if limit <= 0 or window <= 0:
            return None
        count, left = await self.counters.hit(f"{RATE_PREFIX}{name}:{key}", window)
        return max(1.0, float(math.ceil(left))) if count > limit else None

    async def succeeded(self, ip: str, account: str, *, account_wide: bool = True, device: str = "") -> None:
        """The secret was right: the attempt was not a guess (``account_wide`` and
        ``device`` as the attempt counted it)."""
        if self.window <= 0:
            return
        if self.per_ip > 0:
            await self.counters.give_back(self.ip_key(ip))
        if self.per_account > 0:
            await self.counters.clear(self.pair_key(account, ip))
            if device:
                await self.counters.clear(self.device_key(device))
        if account_wide and self.account_lock > 0:
            await self.counters.give_back(self.account_key(account))

    async def unlock(self, accounts: Iterable[str]) -> None:
        """Forget the failures counted against these account names, from every client: the
        account's lock and each address's lock on it (the addresses' own limits stay)."""
        for account in accounts:
            await self.counters.clear(self.account_key(account))
            await self.counters.clear_prefix(self.pair_prefix(account))

    async def aclose(self) -> None:
        await self.counters.aclose()
