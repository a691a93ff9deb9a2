"""Copying a new-api (or one-api) database into Faregate's.

Ids are kept, so every reference between rows (a key's user, a log's channel) stays
true and the same ``sk-`` keys, passwords and access tokens keep working. A row whose id
is already here is left as it is: running the import twice changes nothing, and a second
run after fixing rows the first refused brings in just those. Rows are read and written in
pages, one transaction per page, so a large log table needs no more memory than a page.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tortoise import connections
from tortoise.models import Model
from tortoise.transactions import in_transaction

from faregate import __version__, jsonutil
from faregate.db import models as m
from faregate.importing import oneapi
from faregate.importing.rows import (
    NewApiAbility,
    NewApiLog,
    NewApiRedemption,
    NewApiToken,
    NewApiTopUp,
    NewApiUser,
    Rejected,
    channel_columns,
)
from faregate.importing.source import Source
from faregate.management.channel_bodies import ECHO_MAX
from faregate.management.channel_rules import check_channel, check_keys, key_settings
from faregate.management.channels import rebuild_abilities
from faregate.management.common import BadInput
from faregate.security.crypto import key_hash, mask_key
from faregate.state.option_specs import OptionError
from faregate.state.snapshot import key_lines

if TYPE_CHECKING:
    from faregate.gateway import Gateway

log = logging.getLogger("faregate.importing")

#: refused rows listed per table (all are counted)
SHOWN_REFUSALS = 20
#: the tables read, in the order references need them
TABLES = ("options", "users", "tokens", "channels", "abilities", "redemptions", "top_ups", "logs")


@dataclass
class TableReport:
    table: str
    read: int = 0
    imported: int = 0
    #: rows whose id is already here: left as they are
    present: int = 0
    refused: int = 0
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def refuse(self, ref: Any, reason: str) -> None:
        self.refused += 1
        if len(self.refusals) < SHOWN_REFUSALS:
            self.refusals.append(f"{ref}: {reason}")

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "read": self.read, "imported": self.imported, "present": self.present,
                "refused": self.refused, "refusals": self.refusals, "notes": self.notes}


@dataclass
class ImportReport:
    dry_run: bool
    tables: list[TableReport] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: whose database the source is: new-api's or one-api's
    schema: str = oneapi.NEW_API

    def table(self, name: str) -> TableReport:
        found = TableReport(name)
        self.tables.append(found)
        return found

    def as_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "schema": self.schema, "tables": [t.as_dict() for t in self.tables],
                "notes": self.notes}

    def lines(self) -> list[str]:
        verb = "would import" if self.dry_run else "imported"
        out = [f"source: a {self.schema} database",
               f"{'table':<12} {'read':>9} {verb:>13} {'present':>9} {'refused':>9}"]
        for t in self.tables:
            out.append(f"{t.table:<12} {t.read:>9} {t.imported:>13} {t.present:>9} {t.refused:>9}")
        for t in self.tables:
            out += [f"  {t.table}: {note}" for note in t.notes]
            out += [f"  {t.table} refused {reason}" for reason in t.refusals]
            if t.refused > len(t.refusals):
                out.append(f"  {t.table}: … and {t.refused - len(t.refusals)} more refused")
        out += [f"note: {note}" for note in self.notes]
        return out


Convert = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Unique:
    """A unique column besides the id: a value taken by another row refuses the row
    (``clear`` false) or is dropped from it (``clear`` true: a log keeps its row and
    loses only its duplicate request id)."""

    column: str
    clear: bool = False


class Importer:
    def __init__(self, gateway: Gateway, source: Source, *, dry_run: bool, logs: Source | None = None,
                 schema: str = oneapi.AUTO) -> None:
        self.gw = gateway
        self.source = source
        self.logs_source = logs or source
        self.dry_run = dry_run
        self.schema = schema
        self.report = ImportReport(dry_run)
        #: a source row as new-api's (one-api's rows are translated: faregate.importing.oneapi)
        self.translate: Callable[[str, dict[str, Any]], dict[str, Any]] = lambda table, row: row
        #: channels brought in by this run: their abilities come with them
        self.new_channels: set[int] = set()
        #: a dry run against a database not yet created reads every row as new
        self.target_empty = False
        #: channels imported without their ``settings`` column: id → why it could not come
        self.settings_dropped: dict[int, str] = {}

    async def run(self) -> ImportReport:
        tables = await self.source.tables()
        if "users" not in tables or "channels" not in tables:
            raise Rejected("the source has no users or channels table: not a new-api or one-api database")
        await self._choose_schema(tables)
        if self.dry_run:
            self.target_empty = not await _schema_current()
        await self._options(tables)
        await self._copy("users", m.User, self._user, (Unique("username"), Unique("aff_code", clear=True),
                                                       Unique("access_token", clear=True)))
        await self._copy("tokens", m.Token, self._token, (Unique("key_hash"),))
        await self._channels()
        await self._abilities(tables)
        if "redemptions" in tables:
            await self._copy("redemptions", m.Redemption, self._plain(NewApiRedemption), (Unique("key"),))
        if "top_ups" in tables:
            await self._copy("top_ups", m.TopUp, self._plain(NewApiTopUp), (Unique("trade_no"),))
        if "logs" in await self.logs_source.tables():
            await self._copy("logs", m.Log, self._plain(NewApiLog), (Unique("request_id", clear=True),),
                             source=self.logs_source)
        else:
            self.report.notes.append("the source has no logs table (new-api's LOG_SQL_DSN: pass --logs-from)")
        if not self.dry_run:
            await self._mark_initialised()
            await self._advance_sequences()
        self.report.notes.append("not imported (no Faregate equivalent yet): OAuth account bindings, passkeys, "
                                 "2FA, subscriptions, Midjourney and async tasks, dashboard aggregates")
        return self.report

    async def _choose_schema(self, tables: set[str]) -> None:
        if self.schema == oneapi.AUTO:
            self.schema = oneapi.detect_schema(tables, await self.source.columns("users"),
                                               await self.source.columns("channels"))
        self.report.schema = self.schema
        if self.schema == oneapi.ONE_API:
            self.translate = oneapi.as_new_api
            self.report.notes.append("read as one-api's schema: channel types renumbered as new-api numbers them, "
                                     "channel config, key model and subnet limits and log durations translated")

    # ---- conversions -----------------------------------------------------------------------
    @staticmethod
    def _plain(kind: Any) -> Convert:
        async def convert(row: dict[str, Any]) -> dict[str, Any]:
            values: dict[str, Any] = kind.read(row).columns()
            return values

        return convert

    @staticmethod
    async def _user(row: dict[str, Any]) -> dict[str, Any]:
        values: dict[str, Any] = NewApiUser.read(row).columns()
        return values

    async def _token(self, row: dict[str, Any]) -> dict[str, Any]:
        token = NewApiToken.read(row)
        secret = token.secret()
        return {**token.columns(), "key_hash": key_hash(secret), "key_mask": mask_key(secret),
                # the row id is the ciphertext's associated data, as for keys issued here
                "key_enc": self.gw.box.encrypt(secret, f"token:{token.id}")}

    # ---- the generic copy ------------------------------------------------------------------
    async def _copy(self, table: str, model: type[Model], convert: Convert, unique: Sequence[Unique] = (),
                    source: Source | None = None) -> TableReport:
        report = self.report.table(table)
        seen: dict[str, set[Any]] = {u.column: set() for u in unique}  # within this run (dry runs write nothing)
        deleted = 0
        async for batch in (source or self.source).batches(table):
            report.read += len(batch)
            rows: list[dict[str, Any]] = []
            for row in batch:
                if row.get("deleted_at") is not None:
                    deleted += 1
                    continue
                try:
                    rows.append(await convert(self.translate(table, row)))
                except Rejected as exc:
                    report.refuse(f"id {row.get('id')}", str(exc))
            present = set() if self.target_empty else set(
                await model.filter(id__in=[r["id"] for r in rows]).values_list("id", flat=True))
            report.present += len(present)
            rows = [r for r in rows if r["id"] not in present]
            for rule in unique:
                rows = await self._unique(model, rule, rows, seen[rule.column], report)
            if rows and not self.dry_run:
                async with in_transaction() as conn:
                    await model.bulk_create([model(**r) for r in rows], using_db=conn)
            report.imported += len(rows)
            if table == "channels":
                self.new_channels.update(r["id"] for r in rows)
        if deleted:
            report.notes.append(f"left out, deleted in the source (deleted_at set): {deleted}")
        return report

    async def _unique(self, model: type[Model], rule: Unique, rows: list[dict[str, Any]], seen: set[Any],
                      report: TableReport) -> list[dict[str, Any]]:
        values = [r[rule.column] for r in rows if r.get(rule.column) is not None]
        if not values:
            return rows
        taken = set() if self.target_empty else set(
            await model.filter(**{f"{rule.column}__in": values}).values_list(rule.column, flat=True))
        kept = []
        cleared = 0
        for row in rows:
            value = row.get(rule.column)
            if value is not None and (value in taken or value in seen):
                if not rule.clear:
                    report.refuse(f"id {row['id']}", f"{rule.column} is taken by another row here")
                    continue
                row[rule.column] = None
                cleared += 1
            elif value is not None:
                seen.add(value)
            kept.append(row)
        if cleared:
            report.notes.append(f"imported without their {rule.column} (taken by another row): {cleared}")
        return kept

    # ---- the tables that need more ---------------------------------------------------------
    async def _options(self, tables: set[str]) -> None:
        report = self.report.table("options")
        if "options" not in tables:
            return
        registry = self.gw.option_registry
        present: set[Any] = set() if self.target_empty else set(await m.Option.all().values_list("key", flat=True))
        unknown: list[str] = []
        rows = []
        async for batch in self.source.batches("options", keyed=False):
            for row in batch:
                report.read += 1
                key, value = str(row.get("key") or ""), row.get("value")
                value = "" if value is None else str(value)
                if key not in registry:
                    unknown.append(key)
                    continue
                if key in present:
                    report.present += 1
                    continue
                try:
                    registry.check(key, value)
                except OptionError as exc:
                    report.refuse(key, str(exc).removeprefix(f"{key}: "))
                    continue
                rows.append(m.Option(key=key, value=value))
        if rows and not self.dry_run:
            async with in_transaction() as conn:
                await m.Option.bulk_create(rows, using_db=conn)
        report.imported = len(rows)
        if unknown:
            shown = ", ".join(sorted(unknown)[:15]) + (" …" if len(unknown) > 15 else "")
            report.notes.append(f"left out, not options Faregate has ({len(unknown)}): {shown}")

    async def _channel(self, row: dict[str, Any]) -> dict[str, Any]:
        """Checked by the channel API's own rules: a type no installed plugin serves, a base
        URL pointing at cloud metadata … are refused here as there. new-api's ``settings``
        column ("other settings": a key's format, API versions …) comes as it is when the API
        would take it; otherwise the channel comes without it, and the report says why."""
        columns, key = channel_columns(row)
        settings, problem = _other_settings(row.get("settings"))
        if settings:
            try:
                await self._check_channel({**columns, "settings": settings}, key)
                columns["settings"] = settings
            except BadInput as exc:
                problem = str(exc)
        if not columns.get("settings"):
            try:
                await self._check_channel(columns, key)
            except BadInput as exc:
                raise Rejected(str(exc)) from None
        if problem:
            self.settings_dropped[int(columns["id"])] = problem
        columns["key_enc"] = self.gw.box.encrypt(key, f"channel:{columns['id']}")
        return columns

    async def _check_channel(self, columns: dict[str, Any], key: str) -> None:
        await check_channel(columns, self.gw.providers, creating=True, addresses=self.gw.channel_addresses)
        check_keys(self.gw.providers.get(int(columns.get("type") or 0)), key_lines(key),
                   str(columns.get("other") or ""), key_settings(columns.get("setting"), columns.get("settings")))

    async def _channels(self) -> None:
        report = await self._copy("channels", m.Channel, self._channel)
        dropped = {ref: why for ref, why in self.settings_dropped.items() if ref in self.new_channels}
        if dropped:
            shown = "; ".join(f"channel {ref}: {why}" for ref, why in sorted(dropped.items())[:SHOWN_REFUSALS])
            more = f" … and {len(dropped) - SHOWN_REFUSALS} more" if len(dropped) > SHOWN_REFUSALS else ""
            report.notes.append(f"imported without their settings column (new-api's other settings), which "
                                f"could not come as they are ({len(dropped)}): {shown}{more}")
        if report.refused:
            report.notes.append("a refused channel can be fixed in new-api (or its plugin installed) and the "
                                "import run again: it brings in only what is missing")

    async def _abilities(self, tables: set[str]) -> None:
        report = self.report.table("abilities")
        found: dict[int, list[m.Ability]] = {}
        if "abilities" in tables:
            async for batch in self.source.batches("abilities", keyed=False):
                for row in batch:
                    report.read += 1
                    try:
                        ability = NewApiAbility.read(row)
                    except Rejected as exc:
                        report.refuse(f"channel {row.get('channel_id')} {row.get('model')!r}", str(exc))
                        continue
                    if ability.channel_id in self.new_channels:
                        found.setdefault(ability.channel_id, []).append(m.Ability(**ability.columns()))
                    else:
                        report.present += 1  # its channel was here already, or was refused
        rebuilt = sorted(self.new_channels - set(found))
        report.imported = sum(len(rows) for rows in found.values())
        if self.dry_run:
            return
        async with in_transaction() as conn:
            for channel_id, rows in found.items():
                await m.Ability.filter(channel_id=channel_id).using_db(conn).delete()
                await m.Ability.bulk_create(rows, using_db=conn)
            for channel_id in rebuilt:  # a source without abilities rows for it: derived, as on a save
                channel = await m.Channel.get(id=channel_id, using_db=conn)
                await rebuild_abilities(channel, conn)
        if rebuilt:
            report.notes.append(f"rebuilt from their channel: the abilities of channels {rebuilt[:20]}")

    async def _mark_initialised(self) -> None:
        """An imported root user initialises the system, as new-api's own start does."""
        if await m.Setup.exists() or not await m.User.filter(role=m.ROLE_ROOT).exists():
            return
        await m.Setup.create(id=1, version=__version__, initialized_at=_now())

    async def _advance_sequences(self) -> None:
        """PostgreSQL's id sequences do not see explicit ids: move each past the largest, so
        the next row made here does not collide. (MySQL and SQLite follow by themselves.)"""
        conn = connections.get("default")
        if str(conn.capabilities.dialect) != "postgres":
            return
        for model in (m.User, m.Token, m.Channel, m.Ability, m.Redemption, m.TopUp, m.Log):
            table = model._meta.db_table
            await conn.execute_script(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 - our table names
                f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)")


def _other_settings(value: Any) -> tuple[str, str]:
    """A source channel's ``settings`` column as Faregate stores it, and why it cannot be ("" when
    it can, or when there are none)."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "{}", "null")):
        return "", ""
    if isinstance(value, dict):
        value = jsonutil.dumps_str(value)
    if not isinstance(value, str):
        return "", "not JSON text"
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        return "", "not valid JSON"
    if not isinstance(parsed, dict):
        return "", "not a JSON object"
    if len(value) > ECHO_MAX or "\x00" in value:
        return "", f"longer than {ECHO_MAX} characters" if len(value) > ECHO_MAX else "holds a NUL character"
    return value, ""


def _now() -> int:
    return int(time.time())


async def _schema_current() -> bool:
    from faregate.db.storage import applied_migrations, shipped_migrations

    try:
        return await applied_migrations() == shipped_migrations()
    except Exception:  # noqa: BLE001 - no migrations table yet (each engine has its own error)
        return False


async def import_newapi(gateway: Gateway, source: Source, *, dry_run: bool, logs: Source | None = None,
                        schema: str = oneapi.AUTO) -> ImportReport:
    """Import ``source`` (new-api's or one-api's database: ``schema``, told by its tables
    when ``auto``) into the open database of ``gateway``."""
    report = await Importer(gateway, source, dry_run=dry_run, logs=logs, schema=schema).run()
    log.info("import from new-api %s: %s", "checked (dry run)" if dry_run else "done",
             ", ".join(f"{t.table} {t.imported}" for t in report.tables))
    return report
