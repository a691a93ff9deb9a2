"""The limits' counters in Redis, shared by every worker and node: the memory store's
algorithms (:mod:`faregate.limits.store`) as two Lua scripts, so a request's checks are read,
decided and written in one atomic step and one round trip, on Redis's clock (``TIME``: the
nodes' clocks need not agree).

State per key: a GCRA key is one number (the theoretical arrival time, ms), expiring when it
is in the past; a success log is a list of times, newest first, at most ``limit`` long; a
lease set is a sorted set of request ids scored by their deadline.

When Redis cannot be reached the limits fail open: the request goes on unlimited, a warning is
logged once per outage and each listener is told (the metric). Money never depends on Redis
(the ledger is the database's). After a failure Redis is left alone for :data:`RETRY_AFTER`
seconds, so an outage costs the relay no timeouts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from faregate.limits.store import Check, Update, Verdict

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("faregate.limits")

#: seconds Redis is not asked after a failure (the limits stay open meanwhile)
RETRY_AFTER = 2.0
#: settlements kept through an outage, written when Redis answers again (the newest)
KEEP_AT_MOST = 10_000

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: one per check. ARGV: member, then per check kind, limit, window_ms, cost.
# Returns refused (0-based, -1: admitted), wait_ms, then each check's remaining and reset_ms.
ADMIT = _NOW + """
local member = ARGV[1]
local refused, wait = -1, 0
local news, out_left, out_reset = {}, {}, {}
for i = 1, #KEYS do
  local b = 1 + (i - 1) * 4
  local kind, limit = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local window, cost = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  local key, w = KEYS[i], 0
  if kind == 1 then
    local step = window / limit
    local tat = tonumber(redis.call('GET', key) or '0')
    if tat < now then tat = now end
    local new = tat + math.min(cost, limit) * step
    news[i] = new
    out_left[i] = math.max(0, math.floor((window - (tat - now)) / step))
    out_reset[i] = math.max(0, math.ceil(tat - now))
    w = math.ceil(new - now - window)
  elseif kind == 2 then
    local oldest = redis.call('LINDEX', key, -1)
    while oldest and tonumber(oldest) <= now - window do
      redis.call('RPOP', key)
      oldest = redis.call('LINDEX', key, -1)
    end
    local n = redis.call('LLEN', key)
    out_left[i] = math.max(0, limit - n)
    out_reset[i] = oldest and (tonumber(oldest) + window - now) or 0
    if n >= limit then w = tonumber(oldest) + window - now end
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
    local n = redis.call('ZCARD', key)
    out_left[i] = math.max(0, limit - n)
    out_reset[i] = 0
    if n >= limit then w = 1000 end
  end
  if w > 0 and refused < 0 then refused, wait = i - 1, w end
end
if refused < 0 then
  for i = 1, #KEYS do
    local b = 1 + (i - 1) * 4
    local kind, window = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 3])
    if kind == 1 then
      redis.call('SET', KEYS[i], string.format('%.3f', news[i]), 'PX', math.ceil(news[i] - now) + 1)
    elseif kind == 3 then
      redis.call('ZADD', KEYS[i], now + window, member)
      redis.call('PEXPIRE', KEYS[i], window)
    end
  end
end
local out = {refused, wait}
for i = 1, #KEYS do out[#out + 1] = out_left[i] end
for i = 1, #KEYS do out[#out + 1] = out_reset[i] end
return out
"""

# KEYS: one per update. ARGV per update: kind, limit, window_ms, amount, member.
SETTLE = _NOW + """
for i = 1, #KEYS do
  local b = (i - 1) * 5
  local kind, limit = tonumber(ARGV[b + 1]), tonumber(ARGV[b + 2])
  local window, amount, member = tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4]), ARGV[b + 5]
  local key = KEYS[i]
  if kind == 1 then
    local step = window / limit
    local tat = tonumber(redis.call('GET', key) or '0')
    if amount > 0 then
      tat = math.max(tat, now) + amount * step
    else
      tat = math.max(tat + amount * step, now)
    end
    if tat > now then
      redis.call('SET', key, string.format('%.3f', tat), 'PX', math.ceil(tat - now) + 1)
    else
      redis.call('DEL', key)
    end
  elseif kind == 2 then
    redis.call('LPUSH', key, now)
    redis.call('LTRIM', key, 0, limit - 1)
    redis.call('PEXPIRE', key, window)
  else
    redis.call('ZREM', key, member)
  end
end
return 0
"""


class RedisStore:
    def __init__(self, redis: Redis, failures: list[Callable[[], None]] | None = None) -> None:
        self._redis = redis
        self._admit = redis.register_script(ADMIT)
        self._settle = redis.register_script(SETTLE)
        #: told of every request let through unchecked (the metric)
        self.failures = failures if failures is not None else []
        self._down_until = 0.0
        self._failing = False
        self._kept: list[Update] = []

    async def admit(self, checks: Sequence[Check], member: str) -> Verdict:
        if self._down_until and time.monotonic() < self._down_until:
            return self._open()
        args: list[Any] = [member]
        for check in checks:
            args += [check.kind, check.limit, check.window_ms, check.cost]
        try:
            out = await self._admit(keys=[c.key for c in checks], args=args)
        except Exception as exc:  # redis.RedisError, OSError …: fail open, never refuse for it
            self._failed(exc)
            return self._open()
        self._recovered()
        n = len(checks)
        values = [int(v) for v in out]
        return Verdict(values[0], values[1], values[2:2 + n], values[2 + n:2 + 2 * n])

    async def settle(self, updates: Sequence[Update]) -> None:
        # what an outage kept back goes first: a lease never given back would hold its slot
        # until its deadline
        updates = [*self._kept, *updates]
        self._kept = []
        if self._down_until and time.monotonic() < self._down_until:
            self._kept = updates[-KEEP_AT_MOST:]
            return
        args: list[Any] = []
        for update in updates:
            args += [update.kind, update.limit, update.window_ms, update.amount, update.member]
        try:
            await self._settle(keys=[u.key for u in updates], args=args)
        except Exception as exc:
            self._failed(exc)
            self._kept = updates[-KEEP_AT_MOST:]

    def _open(self) -> Verdict:
        for listener in self.failures:
            listener()
        return Verdict()

    def _failed(self, exc: BaseException) -> None:
        self._down_until = time.monotonic() + RETRY_AFTER
        if not self._failing:  # once per outage, not once per request of a flood
            log.warning("redis unreachable (%s): rate limits are not enforced until it answers again",
                        type(exc).__name__)
            self._failing = True

    def _recovered(self) -> None:
        self._down_until = 0.0
        if self._failing:
            log.warning("redis reachable again: rate limits are enforced again")
            self._failing = False

    async def aclose(self) -> None:
        await self._redis.aclose()
