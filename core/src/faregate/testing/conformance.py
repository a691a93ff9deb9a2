"""The storage conformance suite: one set of tests every storage backend must pass.

A storage plugin re-runs it against its own engine by subclassing
:class:`StorageConformance` in a test module and providing an async ``db_url``
fixture that yields the URL of a fresh, empty database (and drops it afterwards)::

    import pytest, pytest_asyncio
    from faregate.testing.conformance import StorageConformance

    @pytest.mark.mydb
    class TestMyDB(StorageConformance):
        backend_name = "mydb"  # the StorageBackend.name the URL must select

        @pytest_asyncio.fixture
        async def db_url(self):
            name = create_database()
            yield f"mydb://localhost/{name}"
            drop_database(name)

The suite applies the core's migrations itself (the same calls ``faregate serve``
makes), so the database must be empty; on MariaDB/MySQL and PostgreSQL the tests that only
need the migrated schema copy a database migrated once per test process instead
(:mod:`faregate.testing.seeded_servers`; PostgreSQL's copy makes ``db_url``'s database
again). Tortoise keeps one global ORM context per process: every test opens storage and
closes it before the next one starts, and the end-to-end test lets the gateway under test
own the context.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tortoise import Tortoise, connections
from tortoise.exceptions import IntegrityError
from tortoise.expressions import F
from tortoise.fields.base import Field
from tortoise.models import Model
from tortoise.transactions import in_transaction

from faregate.billing.leases import held_of, row_with_held, with_held
from faregate.billing.ledger import InsufficientQuota, LogEntry, QuotaLedger, sweep_dead_workers
from faregate.billing.log_rows import log_insert
from faregate.billing.statements import Statement, StatementBatch
from faregate.billing.workers import release_worker
from faregate.contracts import StorageBackend
from faregate.db import models as m
from faregate.db.storage import (
    CORE_APP,
    applied_migrations,
    close_storage,
    migrate,
    open_storage,
    pick_backend,
    shipped_migrations,
    tortoise_config,
)
from faregate.testing import seeded_servers
from faregate.testing.example_tables import APP as EXAMPLE_APP
from faregate.testing.example_tables import EXAMPLE_TABLES
from faregate.testing.interleave import flush_dying_at_commit

__all__ = ["StorageConformance", "installed_storage_backends", "model_classes", "pick_backend", "tortoise_config"]

CJK = "你好，世界。日本語のテキスト。한국어 텍스트"
EMOJI = "🚀🎉👍🏽👨‍👩‍👧‍👦🇯🇵"  # 4-byte code points, a skin tone modifier, a ZWJ family, a flag
UNICODE = f"{CJK} {EMOJI} café naïve Ωmega"


def installed_storage_backends() -> list[StorageBackend]:
    """Every storage backend the installed plugins register (as the gateway sees them)."""
    from faregate.hooks import GatewayHooks
    from faregate.plugins import load_plugins

    return GatewayHooks(load_plugins().pm).storage_backends()


def model_classes() -> list[type[Model]]:
    """The tables of ``faregate.db.models``."""
    return [obj for _, obj in inspect.getmembers(m, inspect.isclass)
            if issubclass(obj, Model) and obj.__module__ == m.__name__]


def migration_names() -> list[str]:
    """The migration files the core ships, in order (``0001_initial``, …)."""
    return shipped_migrations()


def _sample_rows() -> dict[type[Model], tuple[dict[str, Any], dict[str, Any]]]:
    """Per model: the values to create a row with, then the values to update it to."""
    now = int(time.time())
    return {
        m.User: ({"username": "alice", "password_hash": "argon2$x", "quota": 10, "access_token": "at-1",
                  "aff_code": "AFF1", "setting": '{"notify": true}', "created_at": now},
                 {"display_name": "Alice", "quota": 2**40, "role": m.ROLE_ADMIN, "status": m.USER_DISABLED,
                  "access_token": None, "aff_quota": 2**40, "aff_history": 2**41, "aff_count": 3,
                  "inviter_id": 2, "session_version": 2**31 - 1}),
        m.Token: ({"user_id": 1, "key_hash": "a" * 64, "key_enc": "enc:v1:xyz", "key_mask": "sk-ab**yz",
                   "name": "default", "created_time": now, "model_limits": "gpt-4o,gpt-4o-mini",
                   "allow_ips": "10.0.0.0/8\n127.0.0.1"},
                  {"status": m.TOKEN_DISABLED, "unlimited_quota": True, "remain_quota": 2**35,
                   "model_limits_enabled": True, "expired_time": now + 86400}),
        m.Channel: ({"type": 1, "key_enc": "enc:v1:key", "name": "openai", "base_url": "https://api.example.com",
                     "models": "gpt-4o,gpt-4o-mini", "balance": 1.5, "model_mapping": '{"a": "b"}',
                     "openai_organization": "org-1",
                     "channel_info": '{"is_multi_key": true, "multi_key_status_list": {"1": 2}}',
                     "settings": '{"vertex_key_type": "api_key"}'},
                    {"status": m.CHANNEL_AUTO_DISABLED, "weight": 5, "balance": 2.25, "tag": "eu",
                     "priority": -(2**33), "used_quota": 2**40, "test_model": None}),
        m.Ability: ({"group": "default", "model": "gpt-4o", "channel_id": 1, "tag": "eu"},
                    {"enabled": False, "priority": 2**33, "weight": 3, "tag": None}),
        m.Option: ({"key": "ModelRatio", "value": '{"gpt-4o": 1.25}'},
                   {"value": '{"gpt-4o": 2.5}'}),
        m.Log: ({"user_id": 1, "created_at": now, "type": m.LOG_CONSUME, "username": "alice",
                 "model_name": "gpt-4o", "quota": 1234, "prompt_tokens": 10, "completion_tokens": 20,
                 "is_stream": True, "request_id": "req-1", "other": '{"ratio": 1}'},
                {"content": "refunded", "type": m.LOG_REFUND, "quota": 2**33, "is_stream": False}),
        m.QuotaLease: ({"worker": "w1", "kind": "user", "ref_id": 1, "held": 500},
                       {"held": 2**34}),
        m.Worker: ({"id": "w1", "heartbeat": now}, {"heartbeat": now + 5}),
        m.ChangeEvent: ({"kind": "user", "ref_id": 7, "created_at": now}, {"ref_id": 8}),
        m.Setup: ({"version": "0.1.0", "initialized_at": now}, {"version": "0.2.0"}),
        m.Vendor: ({"name": "OpenAI", "description": "GPT models", "icon": "OpenAI", "created_time": now},
                   {"status": 0, "updated_time": now + 1}),
        m.ModelMeta: ({"model_name": "gpt-4o", "vendor_id": 1, "tags": "chat,vision",
                       "endpoints": '["openai"]', "created_time": now},
                      {"description": "Omni", "name_rule": 1, "sync_official": 0, "updated_time": now + 1}),
        m.Redemption: ({"user_id": 1, "key": "f" * 32, "name": "promo", "quota": 2**40, "created_time": now},
                       {"status": m.REDEMPTION_USED, "used_user_id": 2, "redeemed_time": now, "expired_time": 2**40}),
        m.TopUp: ({"user_id": 1, "amount": 20, "money": Decimal("143.990001"), "trade_no": "USR1NOabc123" + str(now),
                   "payment_method": "alipay", "payment_provider": "epay", "create_time": now},
                  {"status": m.TOPUP_SUCCESS, "complete_time": now + 1, "amount": 2**40,
                   "money": Decimal("99999999999999.999999")}),
        m.AuthFlow: ({"purpose": "login_2fa", "subject": "a@example.com", "secret_hash": "c" * 64, "user_id": 1,
                      "payload": '{"sv": 0}', "expires_at": now + 300, "created_at": now},
                     {"attempts": 4, "expires_at": 2**40}),
        m.UserBinding: ({"user_id": 1, "provider": "github", "subject": "12345678901234567890", "created_at": now},
                        {"subject": "x" * 255}),
        m.QuotaWarning: ({"user_id": 1, "remaining": -(2**40), "threshold": 2**40, "created_at": now},
                         {"remaining": 2**35, "created_at": now + 1}),
        m.PrefillGroup: ({"name": "模型组 openai", "type": "model", "items": '["gpt-4o", "gpt-4o-mini"]',
                          "created_time": now},
                         {"items": '"{\\"openai\\": {}}"', "description": "x" * 255, "updated_time": now + 1}),
        m.Checkin: ({"user_id": 1, "checkin_date": "2026-01-31", "quota_awarded": 10_000, "created_at": now},
                    {"quota_awarded": 2**40}),
    }


def _check_row(row: Model, expected: dict[str, Any]) -> None:
    for name, value in expected.items():
        got = getattr(row, name)
        assert got == value, f"{type(row).__name__}.{name}: wrote {value!r}, read {got!r}"
        if isinstance(value, bool):
            assert isinstance(got, bool), f"{type(row).__name__}.{name} read back as {type(got).__name__}"


def _check_defaults(row: Model, given: dict[str, Any]) -> None:
    for name, field in row._meta.fields_map.items():
        if name in given or field.pk or not isinstance(field, Field):
            continue
        default = field.default
        if default is None and not field.null or callable(default):
            continue
        got = getattr(row, name)
        assert got == default, f"{type(row).__name__}.{name}: default {default!r}, read {got!r}"


async def _poll(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def _sum(model: type[Model], column: str, **filters: Any) -> int:
    values: list[Any] = list(await model.filter(**filters).values_list(column, flat=True))
    return int(sum(values))


class StorageConformance:
    """Subclass it as ``Test<Engine>`` and provide the ``db_url`` fixture."""

    #: the :class:`~faregate.contracts.StorageBackend` name ``db_url`` must select
    #: (checked when set)
    backend_name: str | None = None

    # ---- fixtures ------------------------------------------------------------------------
    @pytest.fixture
    def storage_backends(self) -> list[StorageBackend]:
        return installed_storage_backends()

    @pytest.fixture
    def storage_config(self, db_url: str, storage_backends: list[StorageBackend]) -> dict[str, Any]:
        return tortoise_config(db_url, storage_backends)[1]

    @pytest.fixture
    def backend(self, db_url: str, storage_backends: list[StorageBackend]) -> StorageBackend:
        return pick_backend(db_url, storage_backends)

    @pytest_asyncio.fixture
    async def storage(self, storage_config: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """A migrated database, open through the ORM for the test (a copy of one migrated once
        per test process where the engine allows: :mod:`faregate.testing.seeded_servers`)."""
        await seeded_servers.migrated(storage_config)
        await open_storage(storage_config)
        try:
            yield storage_config
        finally:
            await close_storage()

    # ---- the backend and migrations ----------------------------------------------------
    async def test_url_selects_backend(self, db_url: str, storage_backends: list[StorageBackend]) -> None:
        backend = pick_backend(db_url, storage_backends)
        if self.backend_name is not None:
            assert backend.name == self.backend_name
        connection = backend.tortoise_connection(db_url)
        assert isinstance(connection, (str, dict))

    async def test_migrations_apply_and_rerun_keeps_rows(self, storage_config: dict[str, Any]) -> None:
        await migrate(storage_config)
        await open_storage(storage_config)
        try:
            applied = await _applied_migrations()
            assert applied == migration_names(), "every shipped migration is applied once, in order"
            for model in model_classes():
                assert await model.all().count() == 0, f"{model._meta.db_table} starts empty"
            samples = _sample_rows()  # once: the rows carry the current time
            seeded = {model: (await model.create(**create)).pk for model, (create, _) in samples.items()}
        finally:
            await close_storage()

        await migrate(storage_config)  # again: nothing to do, nothing lost
        await open_storage(storage_config)
        try:
            assert await _applied_migrations() == applied
            for model, (create, _) in samples.items():
                assert await model.all().count() == 1
                _check_row(await model.get(pk=seeded[model]), create)
        finally:
            await close_storage()

    async def test_nodes_migrating_at_once_take_turns(self, db_url: str, storage_config: dict[str, Any],
                                                      tmp_path: Path) -> None:
        """Nodes started together against one empty database (a deployment's replicas) each
        run ``faregate migrate``: the engine's migration lock
        (:meth:`StorageBackend.migration_lock`) lets one apply the migrations while the others
        wait and then find nothing left, instead of two creating the same table or index."""
        env = {**os.environ, "FAREGATE_DB_URL": db_url, "FAREGATE_DATA_DIR": str(tmp_path),
               "FAREGATE_CRYPTO_SECRET": "conformance-crypto", "FAREGATE_SESSION_SECRET": "conformance-session"}
        nodes = [await asyncio.create_subprocess_exec(
            sys.executable, "-m", "faregate.cli", "migrate", env=env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE) for _ in range(3)]
        try:  # without the lock, engines have been seen to deadlock: a failure, not a hang
            outputs = await asyncio.wait_for(asyncio.gather(*(node.communicate() for node in nodes)), 120)
        finally:
            for node in nodes:
                if node.returncode is None:
                    node.kill()
        for node, (_, err) in zip(nodes, outputs, strict=True):
            assert node.returncode == 0, err.decode(errors="replace")[-3000:]
        await open_storage(storage_config)
        try:
            assert await _applied_migrations() == migration_names(), "each migration applied once"
        finally:
            await close_storage()

    async def test_plugin_tables_added_later_migrate_and_keep_rows(
            self, db_url: str, storage_backends: list[StorageBackend], storage_config: dict[str, Any]) -> None:
        """A plugin's own tables (``register_db_models``): installed after the core's
        schema exists, they are created at the next migrate, after the core's, on this
        engine; their rows round-trip; a rerun applies nothing and loses nothing."""
        from faregate.testing.example_tables.models import ExampleOrder

        await migrate(storage_config)  # the core alone first
        await open_storage(storage_config)
        try:
            core_applied = await _applied_migrations()
            user = await m.User.create(username="before-plugin", quota=7)
        finally:
            await close_storage()

        with_plugin = tortoise_config(db_url, storage_backends, [EXAMPLE_TABLES])[1]
        for _ in range(2):  # the second run has nothing to do
            await migrate(with_plugin)
            await open_storage(with_plugin)
            try:
                assert await _applied_migrations() == core_applied
                assert await _applied_migrations(EXAMPLE_APP) == ["0001_initial", "0002_currency"]
                assert (await m.User.get(pk=user.pk)).quota == 7
                if not await ExampleOrder.exists(trade_no="T-1"):
                    await ExampleOrder.create(trade_no="T-1", user_id=user.pk, amount=2**40, note=UNICODE)
                    with pytest.raises(IntegrityError):
                        await ExampleOrder.create(trade_no="T-1", user_id=user.pk)
                order = await ExampleOrder.get(trade_no="T-1")
                assert (order.amount, order.note, order.currency, order.status) == (2**40, UNICODE, "USD", "pending")
                assert await ExampleOrder.all().count() == 1
            finally:
                await close_storage()

    async def test_upgrade_from_first_migration_keeps_rows(self, storage_config: dict[str, Any]) -> None:
        """Rows written by the first release's schema survive every later migration.

        The seed is raw SQL against migration 0001's columns, which never change (an
        applied migration is never edited), so this test stays valid as migrations
        are added and exercises each of them on a populated database."""
        from tortoise.migrations.api import migrate as run_migrations

        first = migration_names()[0]
        await run_migrations(config=storage_config, target=f"faregate.{first}")
        await Tortoise.close_connections()
        await open_storage(storage_config)
        try:
            conn = connections.get("default")
            q = "`" if conn.capabilities.dialect == "mysql" else '"'
            for statement in _seed_0001(q):
                await conn.execute_script(statement)
        finally:
            await close_storage()

        await migrate(storage_config)
        await open_storage(storage_config)
        try:
            assert await _applied_migrations() == migration_names()
            user = await m.User.get(username="seed-user")
            assert (user.quota, user.used_quota, user.display_name) == (3 * 2**31, 42, CJK)
            token = await m.Token.get(key_hash="b" * 64)
            assert (token.user_id, token.remain_quota, token.unlimited_quota) == (user.id, 2**32, True)
            channel = await m.Channel.get(name="seed-channel")
            assert channel.models == "gpt-4o" and channel.balance == 2.5
            assert await m.Ability.filter(group="default", model="gpt-4o", channel_id=channel.id).count() == 1
            assert (await m.Option.get(key="SeedOption")).value == EMOJI
            log = await m.Log.get(request_id="seed-req")
            assert (log.quota, log.is_stream, log.content) == (2**33, True, UNICODE)
            # new rows still get fresh ids after the seeded ones
            assert (await m.User.create(username="after-upgrade")).id > user.id
        finally:
            await close_storage()

    # ---- every table -----------------------------------------------------------------
    async def test_crud_every_model(self, storage: dict[str, Any]) -> None:
        samples = _sample_rows()
        assert set(samples) == set(model_classes()), "a model was added: give it a sample row here"
        for model, (create, update) in samples.items():
            row = await model.create(**create)
            fetched = await model.get(pk=row.pk)
            _check_row(fetched, create)
            _check_defaults(fetched, create)
            # a queryset update, then an instance save
            assert await model.filter(pk=row.pk).update(**update) == 1
            fetched = await model.get(pk=row.pk)
            _check_row(fetched, {**create, **update})
            assert [r.pk for r in await model.filter(pk=row.pk)] == [row.pk]
            for name, value in create.items():
                setattr(fetched, name, value)
            for name in update:
                if name not in create:
                    setattr(fetched, name, getattr(row, name))
            await fetched.save()
            _check_row(await model.get(pk=row.pk), create)
            _check_defaults(await model.get(pk=row.pk), create)
            await fetched.delete()
            assert await model.filter(pk=row.pk).count() == 0, f"{model.__name__} row not deleted"

    async def test_autoincrement_and_bulk_create(self, storage: dict[str, Any]) -> None:
        users = [await m.User.create(username=f"user{i}") for i in range(3)]
        assert users[0].id < users[1].id < users[2].id
        await m.Log.bulk_create([m.Log(user_id=users[0].id, created_at=i, type=m.LOG_CONSUME, quota=i,
                                       request_id=f"bulk-{i}") for i in range(50)])
        ids: list[Any] = list(await m.Log.all().order_by("id").values_list("created_at", flat=True))
        assert ids == list(range(50))

    async def test_unique_constraints(self, storage: dict[str, Any]) -> None:
        await m.Token.create(user_id=1, key_hash="c" * 64, key_enc="e", key_mask="m")
        with pytest.raises(IntegrityError):
            await m.Token.create(user_id=2, key_hash="c" * 64, key_enc="e2", key_mask="m2")

        await m.Log.create(user_id=1, created_at=1, type=m.LOG_CONSUME, request_id="dup")
        with pytest.raises(IntegrityError):
            await m.Log.create(user_id=1, created_at=2, type=m.LOG_CONSUME, request_id="dup")
        # NULL request ids (logs without a request) never collide
        await m.Log.create(user_id=1, created_at=3, type=m.LOG_SYSTEM)
        await m.Log.create(user_id=1, created_at=4, type=m.LOG_SYSTEM)

        await m.Ability.create(group="default", model="gpt-4o", channel_id=1)
        with pytest.raises(IntegrityError):
            await m.Ability.create(group="default", model="gpt-4o", channel_id=1)
        others: tuple[dict[str, Any], ...] = ({"group": "vip"}, {"model": "gpt-4o-mini"}, {"channel_id": 2})
        for other in others:
            await m.Ability.create(**{"group": "default", "model": "gpt-4o", "channel_id": 1, **other})

        await m.User.create(username="bob")
        with pytest.raises(IntegrityError):
            await m.User.create(username="bob")
        await m.QuotaLease.create(worker="w", kind="user", ref_id=1)
        with pytest.raises(IntegrityError):
            await m.QuotaLease.create(worker="w", kind="user", ref_id=1)
        # the failed statements left the connection usable and wrote nothing
        assert await m.Token.all().count() == 1
        assert await m.Log.all().count() == 3
        assert await m.Ability.all().count() == 4
        assert await m.User.all().count() == 1

    async def test_bigint_quotas(self, storage: dict[str, Any]) -> None:
        big = 2**40 + 7
        past_double = 2**53 + 1  # not representable as a float: must not pass through one
        user = await m.User.create(username="whale", quota=big, used_quota=past_double)
        token = await m.Token.create(user_id=user.id, key_hash="d" * 64, key_enc="e", key_mask="m",
                                     remain_quota=2**31, used_quota=2**62)
        log = await m.Log.create(user_id=user.id, created_at=1, type=m.LOG_CONSUME, quota=-(2**35))
        fetched = await m.User.get(id=user.id)
        assert (fetched.quota, fetched.used_quota) == (big, past_double)
        assert (await m.Token.get(id=token.id)).used_quota == 2**62
        assert (await m.Log.get(id=log.id)).quota == -(2**35)
        assert await m.User.filter(quota__gte=2**40).count() == 1
        # arithmetic in the database across the 32-bit boundary
        await m.User.filter(id=user.id).update(quota=2**31 - 1)
        await m.User.filter(id=user.id).update(quota=F("quota") + 1)
        await m.Token.filter(id=token.id).update(remain_quota=F("remain_quota") * 4)
        assert (await m.User.get(id=user.id)).quota == 2**31
        assert (await m.Token.get(id=token.id)).remain_quota == 2**33
        values = await m.User.filter(id=user.id).values("quota", "used_quota")
        assert values == [{"quota": 2**31, "used_quota": past_double}]

    async def test_unicode_round_trip(self, storage: dict[str, Any]) -> None:
        long_text = UNICODE * 400  # ~20k characters, ~60 kB: past MySQL's 64 kB TEXT in bytes
        user = await m.User.create(username=EMOJI * 4, display_name=CJK[:20], remark=UNICODE, setting=long_text)
        full = "🚀" * 64  # a CharField filled to max_length with 4-byte characters
        other = await m.User.create(username=full)
        log = await m.Log.create(user_id=user.id, created_at=1, type=m.LOG_CONSUME, content=long_text,
                                 model_name="模型-🚀", token_name="トークン", other=UNICODE)
        option = await m.Option.create(key="通知🔔", value=UNICODE)

        u = await m.User.get(id=user.id)
        assert (u.username, u.display_name, u.remark, u.setting) == (EMOJI * 4, CJK[:20], UNICODE, long_text)
        assert (await m.User.get(id=other.id)).username == full
        lg = await m.Log.get(id=log.id)
        assert (lg.content, lg.model_name, lg.token_name, lg.other) == (long_text, "模型-🚀", "トークン", UNICODE)
        assert (await m.Option.get(key="通知🔔")).value == UNICODE
        assert option.pk == "通知🔔"
        # lookups by a non-ASCII value
        assert await m.Log.filter(model_name="模型-🚀").count() == 1
        assert await m.User.filter(display_name=CJK[:20]).count() == 1

    async def test_hourly_consumption_sums(self, storage: dict[str, Any]) -> None:
        """The dashboard's per-hour sums: the hour is computed by the engine itself (integer
        division differs between them)."""
        from faregate.management.dashboard import consumption_by_model_hour

        hour = 1_700_000_000 - 1_700_000_000 % 3600
        rows = [(hour + 5, "a", 10), (hour + 3599, "a", 20), (hour + 3600, "a", 40), (hour + 10, "b", 1),
                (hour + 7300, "b", 2)]
        await m.Log.bulk_create([m.Log(user_id=7, username="u7", created_at=t, type=m.LOG_CONSUME, model_name=name,
                                       quota=q, prompt_tokens=q, completion_tokens=1) for t, name, q in rows])
        await m.Log.create(user_id=7, created_at=hour + 1, type=m.LOG_TOPUP, model_name="a", quota=999)
        query = m.Log.filter(type=m.LOG_CONSUME, created_at__gte=hour, created_at__lte=hour + 7200)
        got = [(r["created_at"], r["model_name"], r["count"], r["quota"], r["token_used"])
               for r in await consumption_by_model_hour(query)]
        assert got == [(hour, "a", 2, 30, 32), (hour, "b", 1, 1, 2), (hour + 3600, "a", 1, 40, 41)]
        by_user = await consumption_by_model_hour(query.filter(model_name="b"), "user_id", "username")
        assert [(r["user_id"], r["username"], r["quota"]) for r in by_user] == [(7, "u7", 1)]

    async def test_balances_read_with_their_leases(self, storage: dict[str, Any]) -> None:
        """Users and keys read with what their leases hold in the same statement (a correlated
        subquery the list views page through): only the row's own leases of its own kind."""
        users = [await m.User.create(username=f"held{i}", quota=100 * i) for i in range(3)]
        key = await m.Token.create(id=users[0].id, user_id=users[0].id, key_hash="h" * 64, key_enc="e",
                                   key_mask="m", remain_quota=5)  # the same id as a user
        await m.QuotaLease.bulk_create([m.QuotaLease(worker="w1", kind="user", ref_id=users[1].id, held=7),
                                        m.QuotaLease(worker="w2", kind="user", ref_id=users[1].id, held=2**34),
                                        m.QuotaLease(worker="w1", kind="token", ref_id=key.id, held=9)])
        query = with_held("user", m.User.filter(username__startswith="held"))
        page = await query.order_by("-id").offset(1).limit(2)
        assert [(u.username, u.quota, held_of(u)) for u in page] == [("held1", 100, 7 + 2**34), ("held0", 0, 0)]
        assert await query.count() == 3
        got = await with_held("token", m.Token.filter(user_id=users[0].id)).first()
        assert got is not None and (got.remain_quota, held_of(got)) == (5, 9)
        assert await row_with_held("user", users[1].id, "quota") == {"quota": 100, "held": 7 + 2**34}
        assert await row_with_held("token", key.id + 1000, "remain_quota") is None

    # ---- concurrency -----------------------------------------------------------------
    async def test_conditional_update_never_overdraws(self, storage: dict[str, Any]) -> None:
        quota, n, attempts = 1000, 70, 20
        user = await m.User.create(username="racer", quota=quota)

        async def attempt() -> int:
            return await m.User.filter(id=user.id, quota__gte=n).update(quota=F("quota") - n)

        results = await asyncio.gather(*(attempt() for _ in range(attempts)))
        assert sum(results) == quota // n
        assert (await m.User.get(id=user.id)).quota == quota - (quota // n) * n

    async def test_two_workers_race_for_one_balance(self, storage: dict[str, Any]) -> None:
        initial = 10_000
        user = await m.User.create(username="shared", quota=initial)
        ledgers = [QuotaLedger(min_chunk=700, lease_idle=60, worker_id=f"race-{i}") for i in range(2)]
        for ledger in ledgers:
            await ledger.start()
        try:
            async def spend(ledger: QuotaLedger) -> int:
                try:
                    res = await ledger.reserve(user.id, None, 300)
                except InsufficientQuota:
                    return 0
                res.settle(300, None)
                return 300

            spent = await asyncio.gather(*(spend(ledgers[i % 2]) for i in range(60)))
            for ledger in ledgers:
                await ledger.flush()
            row = await m.User.get(id=user.id)
            held = await _sum(m.QuotaLease, "held", kind="user", ref_id=user.id)
            assert row.quota >= 0 and held >= 0
            assert row.quota + held + sum(spent) == initial
            # every request the balance could pay was served, wherever its quota was leased
            assert sum(spent) == initial // 300 * 300
        finally:
            for ledger in ledgers:
                await ledger.stop()
        row = await m.User.get(id=user.id)
        assert row.quota == initial - sum(spent) and row.used_quota == sum(spent)
        assert await m.QuotaLease.all().count() == 0

    async def test_a_worker_short_of_a_balance_gets_it_back_from_another(self, storage: dict[str, Any],
                                                                       caplog: pytest.LogCaptureFixture) -> None:
        """Issue 26, item 3: what one worker holds leased and has not reserved is given back
        when another needs it (the balance as a whole can pay); what it has reserved is not,
        and the other is then refused once the holder answered, not after a timeout."""
        user = await m.User.create(username="lent", quota=10_000)
        holder = QuotaLedger(min_chunk=50_000, lease_idle=60, worker_id="lent-holder", reclaim_timeout=60)
        short = QuotaLedger(min_chunk=50_000, lease_idle=60, worker_id="lent-short", reclaim_timeout=60)
        for ledger in (holder, short):
            await ledger.start()
        try:
            first = await holder.reserve(user.id, None, 6_000)  # more than half: it leases 6,000
            first.settle(10, None)  # the holder keeps 5,990 leased, idle
            second = await short.reserve(user.id, None, 6_000)  # 4,000 in the column: asks back
            assert await _sum(m.QuotaLease, "held", worker="lent-short") >= 6_000
            # the holder can no longer pay 6,000, nor can the column: refused, once it answered
            with pytest.raises(InsufficientQuota):
                await holder.reserve(user.id, None, 6_000)
            second.settle(20, None)
            third = await holder.reserve(user.id, None, 6_000)  # and back again
            third.settle(30, None)
        finally:
            for ledger in (holder, short):
                await ledger.stop()
        row = await m.User.get(id=user.id)
        assert (row.quota, row.used_quota) == (10_000 - 60, 60)
        assert await m.QuotaLease.all().count() == 0
        assert "no answer from the workers" not in caplog.text, "refused by the timeout, not the answers"

    # ---- billing ---------------------------------------------------------------------
    async def test_run_statements_in_order_inside_the_transaction(self, storage: dict[str, Any],
                                                                  backend: StorageBackend) -> None:
        """``StorageBackend.run_statements`` (the billing flush's writes): each statement once
        per row of values, in order, inside the caller's transaction (a rollback undoes them);
        an error is tortoise's, and the transaction's other writes are undone with it."""
        first = await m.User.create(username="statements-1", quota=10)
        second = await m.User.create(username="statements-2", quota=20)
        add = Statement(lambda conn, q, uid: m.User.filter(id=uid).using_db(conn).update(quota=F("quota") + q), "ii")
        double = Statement(lambda conn, uid: m.User.filter(id=uid).using_db(conn).update(quota=F("quota") * 2), "i")
        rename = Statement(lambda conn, name, uid: m.User.filter(id=uid).using_db(conn).update(username=name), "si")

        async with in_transaction() as conn:
            writes = StatementBatch(conn, backend.run_statements)
            await writes.add_many(add, [(1, first.id), (2, second.id), (3, first.id)])
            await writes.add(double, first.id)  # after the adds: (10 + 1 + 3) * 2
            await writes.add(add, 5, first.id)
            await writes.run()
        assert [(u.quota) for u in await m.User.filter(id__in=[first.id, second.id]).order_by("id")] == [33, 22]

        with contextlib.suppress(RuntimeError):
            async with in_transaction() as conn:
                writes = StatementBatch(conn, backend.run_statements)
                await writes.add(add, 100, second.id)
                await writes.run()
                raise RuntimeError("rolled back")
        assert (await m.User.get(id=second.id)).quota == 22

        with pytest.raises(IntegrityError):
            async with in_transaction() as conn:
                await m.User.filter(id=second.id).using_db(conn).update(quota=1)
                writes = StatementBatch(conn, backend.run_statements)
                await writes.add(add, 100, first.id)
                await writes.add(rename, "statements-2", first.id)  # the other user's name: unique
                await writes.run()
        assert [(u.username, u.quota) for u in await m.User.filter(id__in=[first.id, second.id]).order_by("id")] \
            == [("statements-1", 33), ("statements-2", 22)]

    async def test_run_statements_inserts_rows_in_order(self, storage: dict[str, Any],
                                                        backend: StorageBackend) -> None:
        """The flush's log rows (one INSERT, a row of values each): every row, in order (ids
        rising with them); one that breaks a constraint undoes the others with the transaction."""
        user = await m.User.create(username="inserted", quota=10)
        entries = [_entry(user.id, 0, 0, 10 * i, f"insert-{i}") for i in range(1, 8)]
        async with in_transaction() as conn:
            writes = StatementBatch(conn, backend.run_statements)
            writes.add_sql(*log_insert(entries, conn))
            await writes.run()
        rows = await m.Log.filter(user_id=user.id).order_by("id").values_list("request_id", "quota", "other")
        assert rows == [(f"insert-{i}", 10 * i, '{"note":"conformance ✓"}') for i in range(1, 8)]

        again = [_entry(user.id, 0, 0, 1, "insert-new"), _entry(user.id, 0, 0, 1, "insert-3")]  # taken
        with pytest.raises(IntegrityError):
            async with in_transaction() as conn:
                writes = StatementBatch(conn, backend.run_statements)
                writes.add_sql(*log_insert(again, conn))
                await writes.run()
        assert await m.Log.filter(request_id="insert-new").count() == 0

    async def test_ledger_settle_flush_is_consistent(self, storage: dict[str, Any], backend: StorageBackend) -> None:
        initial, token_initial = 5 * 2**31, 2**32 + 5
        user = await m.User.create(username="payer", quota=initial)
        token = await m.Token.create(user_id=user.id, key_hash="e" * 64, key_enc="e", key_mask="m",
                                     remain_quota=token_initial)
        channel = await m.Channel.create(name="c")
        ledger = QuotaLedger(flush_interval=0.01, lease_idle=60, min_chunk=1000, worker_id="w-settle",
                             run_statements=backend.run_statements)
        await ledger.start()
        try:
            reservations = [await ledger.reserve(user.id, token.id, 500) for _ in range(5)]
            actuals = [120, 480, 0, 700, 333]  # 0: refunded; 700: more than reserved
            for i, (res, actual) in enumerate(zip(reservations, actuals, strict=True)):
                if actual:
                    entry = _entry(user.id, token.id, channel.id, actual, f"settle-{i}")
                    assert res.settle(actual, entry, channel.id)
                    assert not res.settle(actual, entry, channel.id), "settles once"
                else:
                    assert res.refund()
            await ledger.flush()
            consumed = sum(actuals)

            logs = await m.Log.filter(user_id=user.id, type=m.LOG_CONSUME)
            assert sorted(log.quota for log in logs) == sorted(a for a in actuals if a)
            u = await m.User.get(id=user.id)
            held = await _sum(m.QuotaLease, "held", kind="user", ref_id=user.id)
            assert u.quota + held + await _sum(m.Log, "quota", user_id=user.id, type=m.LOG_CONSUME) == initial
            assert (u.used_quota, u.request_count) == (consumed, 4)
            t = await m.Token.get(id=token.id)
            token_held = await _sum(m.QuotaLease, "held", kind="token", ref_id=token.id)
            assert t.remain_quota + token_held + t.used_quota == token_initial
            assert t.used_quota == consumed
            assert (await m.Channel.get(id=channel.id)).used_quota == consumed
            assert await row_with_held("user", user.id, "quota") == {"quota": u.quota, "held": held}
        finally:
            await ledger.stop()
        # everything not spent went back
        assert (await m.User.get(id=user.id)).quota == initial - consumed
        assert (await m.Token.get(id=token.id)).remain_quota == token_initial - consumed
        assert await m.QuotaLease.all().count() == 0
        assert await m.Worker.filter(id="w-settle").count() == 0

    async def test_ledger_refunds_return_everything(self, storage: dict[str, Any], backend: StorageBackend) -> None:
        initial = 2**31 + 11
        user = await m.User.create(username="refunded", quota=initial)
        ledger = QuotaLedger(flush_interval=0.01, lease_idle=60, min_chunk=1000, worker_id="w-refund",
                             run_statements=backend.run_statements)
        await ledger.start()
        try:
            reservations = [await ledger.reserve(user.id, None, 250) for _ in range(6)]
            assert (await m.User.get(id=user.id)).quota < initial  # leased out of the balance
            for i, res in enumerate(reservations):
                entry = _entry(user.id, 0, 0, 0, f"err-{i}", type=m.LOG_ERROR) if i % 2 else None
                assert res.refund(entry)
        finally:
            await ledger.stop()
        u = await m.User.get(id=user.id)
        assert (u.quota, u.used_quota) == (initial, 0)
        assert await m.QuotaLease.all().count() == 0
        assert await m.Log.filter(type=m.LOG_CONSUME).count() == 0
        assert await m.Log.filter(type=m.LOG_ERROR).count() == 3

    async def test_sweep_returns_dead_workers_leases(self, storage: dict[str, Any]) -> None:
        initial = 100_000
        user = await m.User.create(username="swept", quota=initial)
        dead = QuotaLedger(min_chunk=1000, lease_idle=60, worker_id="w-dead")
        live = QuotaLedger(min_chunk=1000, lease_idle=60, worker_id="w-live")
        await dead.start()
        await live.start()
        try:
            await dead.reserve(user.id, None, 400)
            pending = await live.reserve(user.id, None, 100)
            # the dead worker crashes: no flush, no heartbeat since an hour ago
            assert dead._task is not None
            dead._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await dead._task
            await m.Worker.filter(id="w-dead").update(heartbeat=int(time.time()) - 3600)
            # a lease whose worker row is already gone is returned too
            await m.User.filter(id=user.id).update(quota=F("quota") - 50)
            await m.QuotaLease.create(worker="w-ghost", kind="user", ref_id=user.id, held=50)

            live_held = await _sum(m.QuotaLease, "held", worker="w-live")
            assert await sweep_dead_workers(stale_after=60) == 2
            assert await m.QuotaLease.filter(worker__in=["w-dead", "w-ghost"]).count() == 0
            assert await m.Worker.filter(id="w-dead").count() == 0
            assert await _sum(m.QuotaLease, "held", worker="w-live") == live_held > 0
            u = await m.User.get(id=user.id)
            assert u.quota + live_held == initial
            assert await sweep_dead_workers(stale_after=60) == 0
            pending.refund()
        finally:
            await live.stop()
        assert (await m.User.get(id=user.id)).quota == initial

    @pytest.mark.parametrize("landed", [True, False])
    async def test_a_flush_whose_commit_failed_is_written_once(self, storage: dict[str, Any], backend: StorageBackend,
                                                              monkeypatch: pytest.MonkeyPatch, landed: bool) -> None:
        """The connection dies at a flush's commit, after it (``landed``) or before: the next
        flush reads the worker's row (``workers.flushed``, a locking read) and writes the flush
        again only if it did not land. Its charge has no log row (consume logs off), its lease
        goes back in the same flush: nothing else could tell."""
        initial = 100_000
        user = await m.User.create(username="in-doubt", quota=initial)
        ledger = QuotaLedger(flush_interval=60, lease_idle=0, min_chunk=1000, worker_id="w-doubt",
                             run_statements=backend.run_statements)
        await ledger.start()
        try:
            assert (await ledger.reserve(user.id, None, 300)).settle(120, None)
            failures = flush_dying_at_commit(monkeypatch, landed=landed)
            with pytest.raises(ConnectionResetError):
                await ledger.flush()
            assert failures == []
            await ledger.flush()
            u = await m.User.get(id=user.id)
            assert (u.quota, u.used_quota) == (initial - 120, 120)
            assert await m.QuotaLease.all().count() == 0
            # swept as dead with a charge not yet written: the flush sees it by its row count
            assert (await ledger.reserve(user.id, None, 300)).settle(30, None)
            await release_worker("w-doubt")
            await ledger.flush()
            assert await m.Worker.filter(id="w-doubt").count() == 1  # back, and the charge written
        finally:
            await ledger.stop()
        u = await m.User.get(id=user.id)
        assert (u.quota, u.used_quota) == (initial - 150, 150)

    # ---- the change feed -------------------------------------------------------------
    async def test_changefeed_publish_pull_order(self, storage: dict[str, Any], tmp_path: Any) -> None:
        from faregate.default_plugins.options import CORE_REGISTRY, GatewayOptions
        from faregate.security.crypto import SecretBox
        from faregate.state.changefeed import ChangeFeed
        from faregate.state.snapshot import Snapshot

        box = SecretBox("conformance")
        epoch = str(tmp_path / "faregate.epoch")
        user = await m.User.create(username="fed", group="default")
        writer = ChangeFeed(Snapshot(box, CORE_REGISTRY, GatewayOptions), epoch, sync_interval=3600)
        reader = ChangeFeed(Snapshot(box, CORE_REGISTRY, GatewayOptions), epoch, sync_interval=3600)
        await writer.start()
        await reader.start()
        try:
            assert reader.snapshot.users[user.id].group == "default"
            published = []
            for group in ("vip", "svip", "last"):  # later changes win
                await m.User.filter(id=user.id).update(group=group)
                await writer.publish("user", user.id)
                published.append(("user", user.id))
            channel = await m.Channel.create(name="new", models="gpt-4o", group="default", key_enc="k")
            await writer.publish("channel", channel.id)
            published.append(("channel", channel.id))

            events = await m.ChangeEvent.all().order_by("id")
            assert [(e.kind, e.ref_id) for e in events] == published
            assert [e.id for e in events] == sorted({e.id for e in events})
            assert writer.last_id == events[-1].id
            assert writer.snapshot.users[user.id].group == "last"

            # the epoch moved: the reader pulls (here, or in its own poll loop)
            task = reader.check()
            if task is not None:
                await task

            async def caught_up() -> bool:
                return reader.last_id == events[-1].id

            await _poll(caught_up)
            assert reader.snapshot.users[user.id].group == "last"
            assert channel.id in reader.snapshot.channels
            assert reader.check() is None  # nothing new

            # a feed that starts late begins after the newest event
            late = ChangeFeed(Snapshot(box, CORE_REGISTRY, GatewayOptions), epoch, sync_interval=3600)
            await late.start()
            assert late.last_id == events[-1].id
            await late.stop()
        finally:
            await writer.stop()
            await reader.stop()

    # ---- the whole gateway -----------------------------------------------------------
    async def test_gateway_end_to_end(self, db_url: str, make_gateway: Any, fake_openai: Any) -> None:
        """A gateway on this database serves one regular and one streamed request through
        the official OpenAI SDK and writes exactly two consume logs with the right quota."""
        import openai

        from faregate.testing.harness import AdminClient

        server = await make_gateway(db_url=db_url)
        if self.backend_name is not None:
            assert server.gateway.backend.name == self.backend_name
        admin = AdminClient(server.base_url)
        try:
            await admin.setup_root()
            await admin.set_option("ModelRatio", {"gpt-4o-mini": 2})
            await admin.set_option("CompletionRatio", {"gpt-4o-mini": 3})
            await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o-mini")
            key = await admin.add_token(remain_quota=1_000_000)
            client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key, max_retries=0)
            try:
                reply = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hello 你好 🚀"}])
                assert reply.choices[0].message.content and reply.usage is not None
                stream = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "stream please"}], stream=True,
                    stream_options={"include_usage": True})
                text, stream_usage = "", None
                async for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        text += chunk.choices[0].delta.content
                    if chunk.usage is not None:
                        stream_usage = chunk.usage
                assert text and stream_usage is not None
            finally:
                await client.close()

            def quota(usage: Any) -> int:  # new-api's formula with the ratios set above
                return max(1, round((int(usage.prompt_tokens) + int(usage.completion_tokens) * 3) * 2))

            expected = {False: quota(reply.usage), True: quota(stream_usage)}

            async def flushed() -> bool:
                return await m.Log.filter(type=m.LOG_CONSUME).count() >= 2

            await _poll(flushed)
            logs = await m.Log.filter(type=m.LOG_CONSUME).order_by("id")
            assert len(logs) == 2
            assert {log.is_stream: log.quota for log in logs} == expected
            assert [log.model_name for log in logs] == ["gpt-4o-mini"] * 2
            assert len({log.request_id for log in logs}) == 2
            root = await m.User.get(id=admin.user_id)
            assert root.used_quota == sum(expected.values())
            token = await m.Token.get(id=logs[0].token_id)
            assert token.used_quota == sum(expected.values())
            assert token.remain_quota + await _sum(m.QuotaLease, "held", kind="token", ref_id=token.id) \
                == 1_000_000 - sum(expected.values())
        finally:
            await admin.close()
            await server.stop()  # before the database is dropped


def _entry(user_id: int, token_id: int, channel_id: int, quota: int, request_id: str,
           type: int = m.LOG_CONSUME) -> LogEntry:
    return LogEntry(user_id=user_id, username="u", token_id=token_id, token_name="t", model_name="gpt-4o",
                    quota=quota, prompt_tokens=quota // 3, completion_tokens=quota // 5, use_time=1,
                    is_stream=False, channel_id=channel_id, group="default", request_id=request_id, type=type,
                    other={"note": "conformance ✓"})


async def _applied_migrations(app: str = CORE_APP) -> list[str]:
    return await applied_migrations(app)


def _seed_0001(q: str) -> list[str]:
    """INSERTs written against migration 0001's columns (frozen: never edit them).

    No bound parameters (their syntax differs per engine); every value is a literal
    without quotes in it. ``q`` quotes identifiers (``group`` is a reserved word)."""

    def insert(table: str, row: dict[str, Any]) -> str:
        def literal(value: Any) -> str:
            if value is None:
                return "NULL"
            if isinstance(value, bool):
                return "TRUE" if value else "FALSE"
            if isinstance(value, (int, float)):
                assert math.isfinite(value)
                return repr(value)
            assert "'" not in value and "\\" not in value
            return f"'{value}'"

        columns = ", ".join(f"{q}{name}{q}" for name in row)
        values = ", ".join(literal(value) for value in row.values())
        return f"INSERT INTO {q}{table}{q} ({columns}) VALUES ({values})"

    user_id = channel_id = 1  # the first row of an empty table on every engine
    return [
        insert("users", {
            "username": "seed-user", "password_hash": "", "display_name": CJK, "role": 1,
            "status": 1, "email": "", "access_token": None, "quota": 3 * 2**31, "used_quota": 42,
            "request_count": 1, "group": "default", "aff_code": None, "remark": "", "setting": "",
            "created_at": 1}),
        insert("tokens", {
            "user_id": user_id, "key_hash": "b" * 64, "key_enc": "enc", "key_mask": "sk-b**b", "status": 1,
            "name": EMOJI, "created_time": 1, "accessed_time": 1, "expired_time": -1, "remain_quota": 2**32,
            "unlimited_quota": True, "used_quota": 0, "model_limits_enabled": False, "model_limits": "",
            "allow_ips": "", "group": "", "cross_group_retry": False}),
        insert("channels", {
            "type": 1, "key_enc": "k", "openai_organization": None, "test_model": None,
            "status": 1, "name": "seed-channel", "weight": 0, "created_time": 1, "test_time": 0,
            "response_time": 0, "base_url": "", "other": "", "balance": 2.5, "balance_updated_time": 0,
            "models": "gpt-4o", "group": "default", "used_quota": 0, "model_mapping": "",
            "status_code_mapping": "", "priority": 0, "auto_ban": 1, "tag": None, "setting": "",
            "param_override": "", "header_override": "", "remark": ""}),
        insert("abilities", {
            "group": "default", "model": "gpt-4o", "channel_id": channel_id, "enabled": True, "priority": 0,
            "weight": 0, "tag": None}),
        insert("options", {"key": "SeedOption", "value": EMOJI}),
        insert("logs", {
            "user_id": user_id, "created_at": 1, "type": 2, "content": UNICODE, "username": "seed-user",
            "token_name": "", "model_name": "gpt-4o", "quota": 2**33, "prompt_tokens": 1, "completion_tokens": 1,
            "use_time": 1, "is_stream": True, "channel_id": channel_id, "token_id": 0, "group": "default",
            "ip": "", "request_id": "seed-req", "other": ""}),
    ]

