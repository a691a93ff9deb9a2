"""``GET /api/uptime/status`` (public): new-api's Uptime Kuma proxy. For every group of
the ``console_setting.uptime_kuma_groups`` option it reads the status page
``{url}/api/status-page/{slug}`` and its heartbeats ``{url}/api/status-page/heartbeat/{slug}``
and answers the monitors with their name, latest status and 24-hour uptime. The answer is
kept for :data:`CACHE_SECONDS` per worker, and one refresh at a time runs, so anonymous
callers cannot turn this into traffic towards the Kuma servers. A group whose Kuma
cannot be read gets no monitors and an ``error``; the other groups are unaffected."""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field
from quart import Blueprint, Response
from quart_schema import document_response

from faregate import jsonutil
from faregate.management.common import gateway, ok, public
from faregate.management.model_sync import UpstreamError, fetch_json
from faregate.management.openapi import Ok, Shape

if TYPE_CHECKING:
    from faregate.management.host import ManagementHost

log = logging.getLogger("faregate.management")

blueprint = Blueprint("uptime", __name__)

#: module values so tests can shorten them
CACHE_SECONDS = 60.0
FETCH_TIMEOUT = 10.0
MAX_BYTES = 4 << 20  # a status page's last 100 heartbeats per monitor stay far below
MAX_MONITORS = 500  # per group
NAME_MAX = 200


@dataclass
class _Cache:
    key: str = ""
    fetched_at: float = -math.inf
    data: list[dict[str, Any]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


#: per gateway (a test process runs several), gone with it
_caches: weakref.WeakKeyDictionary[ManagementHost, _Cache] = weakref.WeakKeyDictionary()


def _name(value: Any) -> str:
    return value[:NAME_MAX] if isinstance(value, str) else ""


def _monitors(page: Any, beats: Any) -> list[dict[str, Any]]:
    """The monitors of a status page; ``ValueError`` when it is not one."""
    public_groups = page.get("publicGroupList") if isinstance(page, dict) else None
    if not isinstance(public_groups, list) or not isinstance(beats, dict):
        raise ValueError("not an Uptime Kuma status page")
    heartbeats, uptimes = beats.get("heartbeatList"), beats.get("uptimeList")
    heartbeats = heartbeats if isinstance(heartbeats, dict) else {}
    uptimes = uptimes if isinstance(uptimes, dict) else {}
    out: list[dict[str, Any]] = []
    for group in public_groups:
        if not isinstance(group, dict) or not isinstance(group.get("monitorList"), list):
            continue
        for monitor in group["monitorList"]:
            if not isinstance(monitor, dict) or len(out) >= MAX_MONITORS:
                continue
            monitor_id = monitor.get("id")
            uptime = uptimes.get(f"{monitor_id}_24")
            if isinstance(uptime, bool) or not isinstance(uptime, int | float) or not math.isfinite(uptime):
                uptime = 0
            # Kuma lists a monitor's heartbeats oldest first: the last one is its state now
            # (new-api reads the first, the oldest of the last 100)
            beat_list = heartbeats.get(str(monitor_id))
            last = beat_list[-1] if isinstance(beat_list, list) and beat_list else None
            status = last.get("status") if isinstance(last, dict) else 0
            out.append({"name": _name(monitor.get("name")), "uptime": min(max(float(uptime), 0.0), 1.0),
                        "status": status if isinstance(status, int) and not isinstance(status, bool) else 0,
                        "group": _name(group.get("name"))})
    return out


async def _group(config: dict[str, str]) -> dict[str, Any]:
    result: dict[str, Any] = {"categoryName": config["categoryName"], "monitors": []}
    base, slug = config["url"], config["slug"]
    answers: tuple[Any, Any] = await asyncio.gather(
        fetch_json(f"{base}/api/status-page/{slug}", max_bytes=MAX_BYTES, timeout=FETCH_TIMEOUT),
        fetch_json(f"{base}/api/status-page/heartbeat/{slug}", max_bytes=MAX_BYTES, timeout=FETCH_TIMEOUT),
        return_exceptions=True)
    try:
        for answer in answers:
            if isinstance(answer, BaseException):
                raise answer
        result["monitors"] = _monitors(*answers)
    except (UpstreamError, ValueError) as exc:
        # the reason goes to the log: the public answer names neither the Kuma host nor its text
        log.warning("uptime kuma group %r: %s", config["categoryName"], getattr(exc, "message", exc))
        result["error"] = "the status page could not be read"
    return result


class UptimeMonitor(Shape):
    name: str
    uptime: float = Field(description="over 24 hours, 0 to 1")
    status: int = Field(description="Uptime Kuma's: 0 down, 1 up, 2 pending, 3 maintenance")
    group: str


class UptimeGroup(Shape):
    categoryName: str  # noqa: N815 - new-api's field name
    monitors: list[UptimeMonitor]
    error: str | None = Field(default=None, description="present when the status page could not be read")


@blueprint.get("/api/uptime/status")
@public
@document_response(Ok[list[UptimeGroup]])
async def uptime_status() -> Response:
    gw = gateway()
    groups: list[dict[str, str]] = gw.snapshot.options.value("console_setting.uptime_kuma_groups")
    if not groups:
        return ok([])
    key = jsonutil.dumps_str(groups)
    cache = _caches.setdefault(gw, _Cache())
    async with cache.lock:  # callers arriving during a refresh wait for it rather than start their own
        if cache.key != key or time.monotonic() - cache.fetched_at >= CACHE_SECONDS:
            cache.data = list(await asyncio.gather(*(_group(g) for g in groups)))
            cache.key, cache.fetched_at = key, time.monotonic()
        return ok(cache.data)
