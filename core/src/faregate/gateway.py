"""The gateway's state for one worker process: the plugin set and what it
registered, storage, the in-memory snapshot, the quota ledger and the upstream
client. Built by :func:`faregate.app.create_app`, started in ``before_serving``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from faregate.accounts.notify import Notifier, WebhookNotifier
from faregate.billing.ledger import QuotaLedger, sweep_dead_workers
from faregate.billing.quota_warnings import QuotaWarnings
from faregate.channel_monitor import balance_job, monitor_job
from faregate.contracts import (
    DbModels,
    InboundFormat,
    PaymentProvider,
    Provider,
    SecondFactor,
    StorageBackend,
)
from faregate.db import models as m
from faregate.db import storage
from faregate.db.cluster_jobs import ClusterJobs
from faregate.default_plugins.options import CORE_REGISTRY, GatewayOptions
from faregate.exchange.big_bodies import BigBodyLane
from faregate.exchange.breaker import Breakers
from faregate.exchange.policies import EndpointDriver
from faregate.hooks import GatewayHooks, resolve_settings
from faregate.limits.limiter import Limiter
from faregate.log_retention import retention_job
from faregate.net import AddressPolicy, allowed_categories
from faregate.observe.report import Observer
from faregate.observe.request_log import log_request
from faregate.plugins import PluginSet
from faregate.security.crypto import SecretBox, load_or_create_secret
from faregate.services import Services
from faregate.settings import SettingError
from faregate.state.changefeed import ChangeFeed, epoch_path
from faregate.state.option_specs import OptionRegistry, OptionSpec
from faregate.state.snapshot import Snapshot
from faregate.tokens import TokenCounter, Tokenizer
from faregate.upstream import UpstreamClient

if TYPE_CHECKING:
    from quart import Quart

log = logging.getLogger("faregate")

T = TypeVar("T")


def first_by_name(objects: list[T], what: str, key: str = "name") -> dict[str, T]:
    """Registered objects by name; the first registration of a name wins (hook order:
    installed plugins before the core's trylast defaults), the others are reported."""
    found: dict[str, T] = {}
    for obj in objects:
        name = getattr(obj, key)
        if name in found:
            log.warning("%s %s registered twice; keeping the first", what, name)
            continue
        found[name] = obj
    return found


AUTHENTICATOR_KINDS = ("api_key", "session", "access_token")



class Gateway:
    def __init__(self, plugins: PluginSet, overrides: dict[str, Any] | None = None) -> None:
        self.plugins = plugins
        self.hooks = GatewayHooks(plugins.pm)
        declared = self.hooks.settings()
        self.settings = resolve_settings(declared, overrides)
        #: every runtime option: the core's (collected from their owners), then the plugins' (register_settings)
        self.option_registry = OptionRegistry([*CORE_REGISTRY.specs.values(),
                                              *(d for d in declared if isinstance(d, OptionSpec))])
        self.services = Services(self)
        hooks, services = self.hooks, self.services
        self.formats: dict[str, InboundFormat] = first_by_name(hooks.formats(services), "format")
        self.drivers: dict[str, EndpointDriver] = first_by_name(hooks.endpoint_drivers(services),
                                                                "endpoint kind", key="kind")
        self.provider_list: list[Provider] = hooks.providers(services)
        self.providers: dict[int, Provider] = {}
        for provider in self.provider_list:
            for channel_type in provider.channel_types:
                if channel_type in self.providers:
                    log.warning("channel type %s is served by %s and %s; keeping %s", channel_type,
                                self.providers[channel_type].name, provider.name, self.providers[channel_type].name)
                    continue
                self.providers[channel_type] = provider
        self.request_rewriters = hooks.request_rewriters(services)
        self.channel_filters = hooks.channel_filters(services)
        self.channel_selectors = hooks.channel_selectors(services)
        authenticators = hooks.authenticators(services)
        for authenticator in authenticators:
            if authenticator.kind not in AUTHENTICATOR_KINDS:
                log.warning("authenticator %r has unknown kind %r (known: %s); never used", authenticator,
                            authenticator.kind, ", ".join(AUTHENTICATOR_KINDS))
        self.api_key_authenticators = [a for a in authenticators if a.kind == "api_key"]
        #: a route for the login session (Route.login_session) takes these alone
        self.session_authenticators = [a for a in authenticators if a.kind == "session"]
        self.management_authenticators = [a for a in authenticators if a.kind in ("session", "access_token")]
        self.quota_checks = hooks.quota_checks(services)
        self.pricers = hooks.pricers(services)
        self.usage_recorders = hooks.usage_recorders(services)
        self.payment_providers: dict[str, PaymentProvider] = first_by_name(hooks.payment_providers(services),
                                                                           "payment provider")
        self.second_factors: dict[str, SecondFactor] = first_by_name(hooks.second_factors(services),
                                                                     "second factor", key="method")
        #: exact tokenizers by model family (register_token_counters): kept per gateway, so
        #: gateways built in one process with different plugin sets count differently
        self.token_counters: list[TokenCounter] = hooks.token_counters(services)
        #: told how each exchange ended: the request log line, the metrics, the plugins' observers
        self.observers: list[Observer] = [log_request, *hooks.exchange_observers(services)]
        self.storage_backends: list[StorageBackend] = hooks.storage_backends()
        self.db_models: list[DbModels] = list(first_by_name(hooks.db_models(), "tables of app", key="app").values())
        data_dir = self.settings.data_dir
        try:
            crypto_secret = self.settings.crypto_secret or load_or_create_secret(data_dir, "crypto.secret")
            self.session_secret = self.settings.session_secret or load_or_create_secret(data_dir, "session.secret")
            self.db_url = self.settings.db_url or storage.default_url(data_dir)
        except OSError as exc:  # a path under a file, a read-only disk: one line, not a traceback
            raise SettingError(f"{self.settings.named('data_dir')}: the data directory {data_dir} cannot be used: "
                               f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")) from None
        self.box = SecretBox(crypto_secret)
        self._check_db_url()
        self.backend, self.db_config = storage.tortoise_config(self.db_url, self.storage_backends, self.db_models)
        self.snapshot = Snapshot(self.box, self.option_registry, GatewayOptions)
        self.feed: ChangeFeed  # made in start(), once storage is open
        self.ledger = QuotaLedger(flush_interval=self.settings.flush_interval,
                                  lease_idle=self.settings.lease_idle_seconds,
                                  run_statements=self.backend.run_statements)
        self.ledger.recorders = self.usage_recorders
        #: how users are told things (register_notifiers; the core's webhook last), and the
        #: quota warnings the ledger's flushes trigger (faregate.billing.quota_warnings)
        webhook = WebhookNotifier(allowed_categories(self.settings.get("notify_private_addresses", "deny")))
        self.notifiers: dict[str, Notifier] = first_by_name([*hooks.notifiers(services), webhook], "notifier",
                                                            key="kind")
        self.quota_warnings = QuotaWarnings(lambda: self.snapshot.options, self.notifiers, self.spawn)
        self.ledger.watchers.append(self.quota_warnings.charged)
        #: where channels may connect (FAREGATE_CHANNEL_PRIVATE_ADDRESSES), checked when a channel
        #: is saved and again at every connection one makes (the upstream client's)
        self.channel_addresses = AddressPolicy(allowed_categories(self.settings.get("channel_private_addresses",
                                                                                    "allow")))
        self.upstream = UpstreamClient(connect_timeout=self.settings.connect_timeout,
                                       first_byte_timeout=self.settings.first_byte_timeout,
                                       addresses=self.channel_addresses)
        #: big request bodies take turns for their CPU work (faregate.exchange.big_bodies)
        self.big_bodies = BigBodyLane()
        #: this worker's channel breakers (cooldowns, half-open trials): see faregate.exchange.breaker
        self.breakers = Breakers(trial_window=max(1.0, min(self.settings.first_byte_timeout, 300.0)))
        #: the relay's rate limits (faregate.limits): this process's until start() reaches Redis,
        #: so building a gateway (doctor, config) never reads the Redis URL
        self.limiter = Limiter()
        self.started_at = int(time.time())
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[Any] | None = None
        #: the jobs that run once per cluster (log retention, the channel monitor, the balance
        #: refresh), each in the worker holding its lease (faregate.db.cluster_jobs)
        self.cluster_jobs = ClusterJobs(self.ledger.worker_id, self.settings.job_lease_seconds)

    # ---- lifecycle ------------------------------------------------------------------
    async def start(self, app: Quart) -> None:
        if self.settings.migrate:
            await storage.migrate(self.db_config, self.backend.migration_lock(self.db_url))
        await storage.open_storage(self.db_config)
        self.feed = ChangeFeed(self.snapshot, epoch_path(self.settings.data_dir, self.db_url), self.settings.redis_url,
                               self.settings.sync_interval)
        await self.feed.start()
        if self.settings.redis_url:
            # the metrics' listeners, attached when the app was built, stay with the new limiter
            self.limiter = Limiter.from_settings(self.settings.redis_url, like=self.limiter)
        await sweep_dead_workers(stale_after=self.settings.sweep_interval * 3)
        await self.ledger.start()
        await self.upstream.start()
        self._sweeper = asyncio.create_task(self._sweep_loop(), name="lease-sweeper")
        for job in (retention_job(lambda: self.snapshot.options, self.settings.retention_interval),
                    monitor_job(self), balance_job(self, self.settings.channel_update_frequency)):
            self.cluster_jobs.add(job)
        self.cluster_jobs.start()
        await self.hooks.startup(app, self.services)
        # what exists now (modules, plugins, the snapshot) lives as long as the process: keep
        # it out of the cyclic collector's scans, which otherwise grow with every import
        gc.collect()
        gc.freeze()

    async def stop(self, app: Quart) -> None:
        await self.hooks.shutdown(app, self.services)
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.cluster_jobs.stop()
        self.quota_warnings.close()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)
        await self.ledger.stop()
        await self.limiter.aclose()
        await self.feed.stop()
        await self.upstream.stop()
        await storage.close_storage()

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval)
            try:
                # a task (a context) of its own, as the ledger's flush: when a connection dies
                # under release_worker's transaction, tortoise may leave that transaction set in
                # the task's context, and every later sweep of this loop would use it
                await asyncio.ensure_future(sweep_dead_workers(stale_after=self.settings.sweep_interval * 3))
            except Exception:
                log.exception("lease sweep failed")

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run work that must outlive the request (closing upstreams, disabling
        channels); awaited at shutdown."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ---- actions used by the relay -----------------------------------------------------
    def tokenizer(self, model: str) -> Tokenizer | None:
        """The exact tokenizer of ``model``: the first registered counter's that knows it;
        None (the estimator's rule) when none does or none is installed."""
        for counter in self.token_counters:
            found = counter.tokenizer(model)
            if found is not None:
                return found
        return None

    def _check_db_url(self) -> None:
        """A database URL no storage plugin serves or its plugin cannot read (a port that
        is no number) stops the start in one line naming the setting, password masked."""
        from faregate.errors import GatewayError
        from faregate.observe.causes import describe_failure, url_secrets

        try:
            storage.pick_backend(self.db_url, self.storage_backends).tortoise_connection(self.db_url)
        except (ValueError, GatewayError) as exc:
            where = self.settings.named("db_url")
            cause = exc.message if isinstance(exc, GatewayError) else describe_failure(exc, url_secrets(self.db_url))
            raise SettingError(f"{where}: the database URL cannot be used: {cause}") from None

    async def disable_channel(self, channel_id: int, reason: str) -> bool:
        """Disable an enabled channel automatically; True when this call did (once per event)."""
        self.snapshot.drop_channel(channel_id)
        changed = await m.Channel.filter(id=channel_id, status=m.CHANNEL_ENABLED).update(
            status=m.CHANNEL_AUTO_DISABLED)
        if changed:
            await m.Ability.filter(channel_id=channel_id).update(enabled=False)
            log.warning("channel %s disabled automatically: %s", channel_id, reason)
            await self.feed.publish("channel", channel_id)
        return bool(changed)
