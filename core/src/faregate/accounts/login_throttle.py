"""The login throttle as the settings configure it: shared through Redis when
``FAREGATE_REDIS_URL`` is set, else this worker's own counters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faregate.security.throttle import Counters, LoginThrottle, MemoryCounters, RedisCounters

if TYPE_CHECKING:
    from faregate.settings import Settings


def login_throttle_for(settings: Settings) -> LoginThrottle:
    counters: Counters
    if settings.redis_url:
        import redis.asyncio as aioredis

        counters = RedisCounters(aioredis.from_url(settings.redis_url))
    else:
        counters = MemoryCounters()
    return LoginThrottle(counters, window=float(settings.login_window_seconds),
                         per_account=int(settings.login_max_failures_per_account),
                         per_ip=int(settings.login_max_failures_per_ip),
                         account_lock=int(settings.login_account_lock_failures))
