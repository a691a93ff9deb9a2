"""The gateway's state for one worker process: the plugin set and what it
registered, storage, the in-memory snapshot, the quota ledger and the upstream
client. Built by :func:`faregate.app.create_app`, started in ``before_serving``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Coroutine
from typing import Any

from faregate.billing.ledger import QuotaLedger, sweep_dead_workers
from faregate.contracts import InboundFormat, Provider, StorageBackend
from faregate.db import models as m
from faregate.db import storage
from faregate.hooks import GatewayHooks
from faregate.plugins import PluginSet
from faregate.relay.upstream import UpstreamClient
from faregate.security.crypto import SecretBox, load_or_create_secret
from faregate.settings import CORE_SETTINGS, Settings
from faregate.state.changefeed import ChangeFeed
from faregate.state.snapshot import Snapshot

log = logging.getLogger("faregate")


class Gateway:
    def __init__(self, plugins: PluginSet, overrides: dict[str, Any] | None = None) -> None:
        self.plugins = plugins
        self.hooks = GatewayHooks(plugins.pm)
        self.settings = Settings([*CORE_SETTINGS, *self.hooks.settings()], overrides)
        self.formats: dict[str, InboundFormat] = {}
        for fmt in self.hooks.formats():
            if fmt.name in self.formats:
                log.warning("format %s registered twice; keeping the first", fmt.name)
                continue
            self.formats[fmt.name] = fmt
        self.providers: dict[int, Provider] = {}
        self.provider_list: list[Provider] = self.hooks.providers()
        for provider in self.provider_list:
            for channel_type in provider.channel_types:
                self.providers.setdefault(channel_type, provider)
        self.request_rewriters = self._bind(self.hooks.request_rewriters())
        self.channel_filters = self._bind(self.hooks.channel_filters())
        self.channel_selectors = self._bind(self.hooks.channel_selectors())
        authenticators = self._bind(self.hooks.authenticators())
        self.api_key_authenticators = [a for a in authenticators if a.kind == "api_key"]
        self.management_authenticators = [a for a in authenticators if a.kind in ("session", "access_token")]
        self.quota_checks = self._bind(self.hooks.quota_checks())
        self.pricers = self._bind(self.hooks.pricers())
        self.usage_recorders = self._bind(self.hooks.usage_recorders())
        self.payment_providers: dict[str, Any] = {}
        for payment in self._bind(self.hooks.payment_providers()):
            self.payment_providers.setdefault(payment.name, payment)  # first wins, as for formats
        self.storage_backends: list[StorageBackend] = self.hooks.storage_backends()
        data_dir = self.settings.data_dir
        crypto_secret = self.settings.crypto_secret or load_or_create_secret(data_dir, "crypto.secret")
        self.session_secret = self.settings.session_secret or load_or_create_secret(data_dir, "session.secret")
        self.box = SecretBox(crypto_secret)
        self.db_url = self.settings.db_url or storage.default_url(data_dir)
        self.backend, self.db_config = storage.tortoise_config(self.db_url, self.storage_backends)
        self.snapshot = Snapshot(self.box)
        self.feed: ChangeFeed = None  # type: ignore[assignment]  # made in start()
        self.ledger = QuotaLedger(flush_interval=self.settings.flush_interval,
                                  lease_idle=self.settings.lease_idle_seconds)
        self.ledger.recorders = self.usage_recorders
        self.upstream = UpstreamClient(connect_timeout=self.settings.connect_timeout,
                                       first_byte_timeout=self.settings.first_byte_timeout)
        self.started_at = int(time.time())
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[Any] | None = None

    def _bind(self, objects: list[Any]) -> list[Any]:
        """Give core-provided policy objects a handle on the gateway."""
        for obj in objects:
            if getattr(obj, "gateway", 0) is None:
                obj.gateway = self
        return objects

    # ---- lifecycle ------------------------------------------------------------------
    async def start(self, app: Any) -> None:
        if self.settings.migrate:
            await storage.migrate(self.db_config)
        await storage.open_storage(self.db_config)
        epoch_path = os.path.join(self.settings.data_dir, "faregate.epoch")
        self.feed = ChangeFeed(self.snapshot, epoch_path, self.settings.redis_url, self.settings.sync_interval)
        await self.feed.start()
        await sweep_dead_workers(stale_after=self.settings.sweep_interval * 3)
        await self.ledger.start()
        await self.upstream.start()
        self._sweeper = asyncio.create_task(self._sweep_loop(), name="lease-sweeper")
        await self.hooks.startup(app)

    async def stop(self, app: Any) -> None:
        await self.hooks.shutdown(app)
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)
        await self.ledger.stop()
        await self.feed.stop()
        await self.upstream.stop()
        await storage.close_storage()

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sweep_interval)
            try:
                await sweep_dead_workers(stale_after=self.settings.sweep_interval * 3)
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
    async def disable_channel(self, channel_id: int, reason: str) -> None:
        self.snapshot.drop_channel(channel_id)
        changed = await m.Channel.filter(id=channel_id, status=m.CHANNEL_ENABLED).update(
            status=m.CHANNEL_AUTO_DISABLED)
        if changed:
            await m.Ability.filter(channel_id=channel_id).update(enabled=False)
            log.warning("channel %s disabled automatically: %s", channel_id, reason)
            await self.feed.publish("channel", channel_id)
