"""Prometheus metrics, served at ``GET /metrics`` by :mod:`faregate.edge.metrics` (docs/metrics.md
lists every series).

One :class:`Metrics` per gateway, on its own ``CollectorRegistry`` (never the global
default registry: tests run several gateways in one process). What is counted per
request comes from the exchange's :class:`~faregate.observe.report.ExchangeReport`
(an observer appended to ``gateway.observers``); it runs on the event loop for every
request, so the labelled children are made once per label tuple and kept. What is
live (open reservations, active streams, the ledger's queue, the database pool) is
read from the objects that own it when scraped, never counted on the hot path here.

With several worker processes (``faregate serve --workers N``) the supervisor points
``PROMETHEUS_MULTIPROC_DIR`` at a fresh directory before the workers start; each worker
then writes its values to files there and ``/metrics`` in any worker sums them all
(``MultiProcessCollector``). The live gauges are written by each worker every
:data:`LIVE_REFRESH_SECONDS` (and by the scraped one right before answering).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

import faregate
from faregate.exchange import streaming
from faregate.observe.report import ExchangeReport

if TYPE_CHECKING:
    from faregate.exchange.host import ExchangeHost

log = logging.getLogger("faregate.metrics")

#: set by the supervisor for its workers (prometheus_client's own variable)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: total latency of an exchange: LLM calls take seconds to minutes
DURATION_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, math.inf)
#: the gateway's own share: normally well under a millisecond
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, math.inf)
#: how often a worker writes its live gauges in multiprocess mode
LIVE_REFRESH_SECONDS = 1.0
#: the channel label of a request refused before any channel was tried; the model label without a model
NONE = "none"
#: the model label of a model no channel serves (a client's typo must not make a new series)
OTHER = "other"


def multiprocess_dir() -> str | None:
    """The directory shared by the workers' metric files, when there are several workers."""
    return os.environ.get(MULTIPROC_ENV) or None


class _ModelSeries:
    """The children of one (route, model): shared by its channels' series, with what they were
    told since the last fold (:meth:`Metrics.fold`)."""

    __slots__ = ("duration", "overhead", "failovers", "input_tokens", "output_tokens", "quota", "durations",
                 "duration_sum", "overheads", "overhead_sum", "failed_over", "tokens_in", "tokens_out", "charged",
                 "dirty")

    def __init__(self, metrics: Metrics, route: str, model: str) -> None:
        self.duration = metrics.duration.labels(route)
        self.overhead = metrics.overhead.labels(route)
        self.failovers = metrics.failovers.labels(model)
        self.input_tokens = metrics.tokens.labels(model, "input")
        self.output_tokens = metrics.tokens.labels(model, "output")
        self.quota = metrics.quota.labels(model)
        self.durations, self.overheads = [0] * len(DURATION_BUCKETS), [0] * len(OVERHEAD_BUCKETS)
        self.duration_sum = self.overhead_sum = 0.0
        self.failed_over = self.tokens_in = self.tokens_out = self.charged = 0
        self.dirty = False

    def fold(self) -> None:
        _fold_histogram(self.duration, self.durations, self.duration_sum)
        _fold_histogram(self.overhead, self.overheads, self.overhead_sum)
        self.duration_sum = self.overhead_sum = 0.0
        for child, amount in ((self.failovers, self.failed_over), (self.input_tokens, self.tokens_in),
                              (self.output_tokens, self.tokens_out), (self.quota, self.charged)):
            if amount:
                child.inc(amount)
        self.failed_over = self.tokens_in = self.tokens_out = self.charged = 0
        self.dirty = False


class _Series:
    """The children of one (route, model, channel, status): looked up once per request. A new
    channel's first request makes only its own two (10,000 channels meet many first requests)."""

    __slots__ = ("requests", "attempts", "model", "count", "tried", "dirty")

    def __init__(self, metrics: Metrics, route: str, model: str, channel: str, status: str,
                 shared: _ModelSeries) -> None:
        self.requests = metrics.requests.labels(route, model, channel, status)
        self.attempts = metrics.attempts.labels(channel)
        self.model = shared
        self.count = self.tried = 0
        self.dirty = False

    def fold(self) -> None:
        if self.count:
            self.requests.inc(self.count)
        if self.tried:
            self.attempts.inc(self.tried)
        self.count = self.tried = 0
        self.dirty = False


def _fold_histogram(child: Histogram, counts: list[int], total: float) -> None:
    """Add observations counted per bucket to ``child``, as as many ``observe`` calls would
    (prometheus_client's own bucket and sum values: core/tests/test_metric_folds.py checks them)."""
    child._sum.inc(total)  # prometheus_client's child state
    for i, count in enumerate(counts):
        if count:
            child._buckets[i].inc(count)
            counts[i] = 0


class Metrics:
    def __init__(self, gateway: ExchangeHost, registry: CollectorRegistry | None = None) -> None:
        self.gateway = gateway
        self.registry = registry if registry is not None else CollectorRegistry()
        self.multiprocess_dir = multiprocess_dir()
        r = self.registry
        self.requests = Counter("faregate_requests", "Client requests through the relay, by how they ended.",
                                ("route", "model", "channel", "status"), registry=r)
        self.duration = Histogram("faregate_request_duration_seconds",
                                  "Total latency of relayed requests (a stream: until its end).", ("route",),
                                  buckets=DURATION_BUCKETS, registry=r)
        self.overhead = Histogram("faregate_overhead_seconds",
                                  "The gateway's own share of each request's latency (total minus upstream time).",
                                  ("route",), buckets=OVERHEAD_BUCKETS, registry=r)
        self.attempts = Counter("faregate_upstream_attempts",
                                "Upstream attempts of requests, by the channel that finally answered.",
                                ("channel",), registry=r)
        self.failovers = Counter("faregate_failovers", "Retries on another channel (attempts beyond the first).",
                                 ("model",), registry=r)
        self.tokens = Counter("faregate_tokens", "Tokens billed.", ("model", "direction"), registry=r)
        self.quota = Counter("faregate_quota_charged", "Quota charged (new-api quota units).", ("model",),
                             registry=r)
        self.open_reservations = self._live("faregate_open_reservations",
                                            "Requests holding a quota reservation not yet settled.")
        self.reserved_quota = self._live("faregate_reserved_quota",
                                         "Quota held by open reservations (new-api quota units).")
        self.active_streams = self._live("faregate_active_streams",
                                         "Streamed answers being relayed to clients (per process, summed).")
        self.log_queue_depth = self._live("faregate_log_queue_depth",
                                          "Log rows waiting for the ledger's next flush to the database.")
        self.channels_cooling = self._live("faregate_channels_cooling",
                                           "Channels and keys of multi-key channels in a cooldown after failing "
                                           "(per process, summed).")
        self.channel_trips = Counter("faregate_channel_trips",
                                     "Cooldowns started: a channel (scope channel) or one key of a multi-key "
                                     "channel (scope key) failed.", ("channel", "scope"), registry=r)
        gateway.breakers.listeners.append(self.trip)
        self.rate_limited = Counter("faregate_rate_limited",
                                    "Relay requests refused by a rate limit (limit: requests or tokens).",
                                    ("limit",), registry=r)
        self.rate_limit_unchecked = Counter("faregate_rate_limit_unchecked",
                                            "Relay requests let through unchecked because Redis, which keeps the "
                                            "rate limits, did not answer (the limits fail open).", registry=r)
        gateway.limiter.listeners.append(lambda limit: self.rate_limited.labels(limit).inc())
        gateway.limiter.failures.append(self.rate_limit_unchecked.inc)
        self.db_pool = Gauge("faregate_db_pool_connections",
                             "Database connections of the storage layer (state: open, idle).", ("state",),
                             multiprocess_mode="livesum", registry=r)
        self.info = Gauge("faregate_info", "Always 1: the running version and node type.",
                          ("version", "node_type"), multiprocess_mode="max", registry=r)
        self.info.labels(faregate.__version__, str(gateway.settings.node_type)).set(1)
        self._series: dict[tuple[str, str, int, int], _Series] = {}
        self._unfolded: list[_Series | _ModelSeries] = []
        self._model_series: dict[tuple[str, str], _ModelSeries] = {}
        self._routes_seen = -1
        self._known_models: frozenset[str] = frozenset()

    def _live(self, name: str, documentation: str) -> Gauge:
        return Gauge(name, documentation, multiprocess_mode="livesum", registry=self.registry)

    # ---- per request (an observer: on the event loop, keep it cheap) ---------------------
    def observe(self, report: ExchangeReport) -> None:
        """Count a finished exchange, in plain numbers (a prometheus child takes a lock per
        call, a histogram walks its buckets in Python): :meth:`fold` hands them over before
        every scrape and, with several workers, every :data:`LIVE_REFRESH_SECONDS`."""
        model = self.model_label(report.model, report.channel_id)
        key = (report.route, model, report.channel_id, report.status)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = self._new_series(report.route, model, report.channel_id, report.status)
        series.count += 1
        shared = series.model
        seconds, overhead = report.seconds, report.overhead_seconds
        if seconds == seconds:  # NaN in no bucket, as prometheus_client's observe
            shared.durations[bisect_left(DURATION_BUCKETS, seconds)] += 1
        shared.duration_sum += seconds
        if overhead == overhead:
            shared.overheads[bisect_left(OVERHEAD_BUCKETS, overhead)] += 1
        shared.overhead_sum += overhead
        if report.attempts:
            series.tried += report.attempts
            if report.attempts > 1:
                shared.failed_over += report.attempts - 1
        shared.tokens_in += report.input_tokens
        shared.tokens_out += report.output_tokens
        shared.charged += report.quota
        if not series.dirty:
            series.dirty = True
            self._unfolded.append(series)
        if not shared.dirty:
            shared.dirty = True
            self._unfolded.append(shared)

    def fold(self) -> None:
        """Hand the counts kept since the last fold to the prometheus children."""
        unfolded, self._unfolded = self._unfolded, []
        for series in unfolded:
            series.fold()

    def _new_series(self, route: str, model: str, channel_id: int, status: int) -> _Series:
        shared = self._model_series.get((route, model))
        if shared is None:
            shared = self._model_series[(route, model)] = _ModelSeries(self, route, model)
        channel = str(channel_id) if channel_id else NONE
        return _Series(self, route, model, channel, str(status), shared)

    def trip(self, channel_id: int, scope: str) -> None:
        """A breaker opened (told by :class:`~faregate.exchange.breaker.Breakers`)."""
        self.channel_trips.labels(str(channel_id), scope).inc()

    def model_label(self, model: str, channel_id: int) -> str:
        """The model itself when a channel serves it, else ``other`` (bounded cardinality)."""
        if not model:
            return NONE
        if channel_id:
            return model  # routed to a channel: a model some channel serves
        snapshot = self.gateway.snapshot
        if snapshot.routes_changes != self._routes_seen:  # bumped whenever channels or abilities change
            self._routes_seen = snapshot.routes_changes
            known = {name for by_model in snapshot.routes.values() for name in by_model}
            known.update(name for channel in snapshot.channels.values() for name in channel.models)
            self._known_models = frozenset(known)
        return model if model in self._known_models else OTHER

    # ---- at scrape time ---------------------------------------------------------------
    def refresh(self) -> None:
        """Fold the per-request counts and write the live gauges from the objects that own them."""
        self.fold()
        ledger = self.gateway.ledger
        self.open_reservations.set(ledger.open_reservations)
        self.reserved_quota.set(ledger.reserved_quota)
        self.active_streams.set(streaming.ACTIVE_STREAMS[0])
        self.log_queue_depth.set(ledger.queued_logs)
        self.channels_cooling.set(self.gateway.breakers.cooling_count())
        for state, value in db_pool_connections().items():
            self.db_pool.labels(state).set(value)

    def exposition(self) -> bytes:
        """The text format: this gateway's registry, or every worker's files summed."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(registry)

    async def scrape(self) -> bytes:
        self.refresh()
        if self.multiprocess_dir is None:
            return self.exposition()
        return await asyncio.to_thread(self.exposition)  # reads one file per worker and kind

    async def refresh_loop(self) -> None:
        """Multiprocess mode: keep this worker's live gauges current for the others' scrapes."""
        while True:
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - metrics must never take a worker down
                log.exception("refreshing the live metrics failed")
            await asyncio.sleep(LIVE_REFRESH_SECONDS)


def db_pool_connections() -> dict[str, float]:
    """What the storage layer tells cheaply: ``open`` (connections in the pool; SQLite:
    1 while its one connection is open) and, for pooled engines, ``idle`` (not lent to
    a query or transaction). Empty before storage is open or for an engine without either."""
    try:
        from tortoise import connections

        client: Any = connections._get_storage().get("default")  # a peek: get() would make one
    except Exception:  # noqa: BLE001 - no storage context (not started, or stopped)
        return {}
    if client is None:
        return {}
    pool = getattr(client, "_pool", None)
    if pool is not None:
        if hasattr(pool, "get_size"):  # asyncpg
            return {"open": float(pool.get_size()), "idle": float(pool.get_idle_size())}
        if hasattr(pool, "freesize"):  # aiomysql, asyncmy
            return {"open": float(pool.size), "idle": float(pool.freesize)}
        return {}
    if hasattr(client, "_connection"):  # SQLite: one connection
        return {"open": 1.0 if client._connection is not None else 0.0}
    return {}
