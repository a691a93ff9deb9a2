"""The in-memory view of everything the relay reads per request: API keys, users,
channels, the routing index and options. Loaded once, then kept current by the
change feed (see :mod:`faregate.state.changefeed`), so the hot path never waits on
the database for things that rarely change."""

from __future__ import annotations

import ipaddress
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Generic, Protocol, TypeVar

from faregate import jsonutil
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.principals import TokenEntry, UserEntry
from faregate.security.crypto import SecretBox
from faregate.state.channel_features import NO_FEATURES, ChannelFeatures, compile_features
from faregate.state.ended_sessions import ended_sessions, ended_sessions_by_user
from faregate.state.option_specs import OptionRegistry
from faregate.state.options import Options
from faregate.state.routing import RouteIndex, Routes

log = logging.getLogger("faregate.state")

# covariant: a reader typed for a lower layer's options accepts a snapshot of a richer options class
# (only the change feed, which built it, replaces the options)
OptionsT = TypeVar("OptionsT", bound=Options, covariant=True)


#: a multi-key channel's per-key status (``channel_info.multi_key_status_list``): absent means enabled
KEY_ENABLED, KEY_MANUALLY_DISABLED, KEY_AUTO_DISABLED = 1, 2, 3
KEY_MODES = ("random", "polling")

#: where each polling channel's rotation stands in this worker (kept across reloads of the channel)
_polling_cursor: dict[int, int] = {}
#: channel ids per query when reloading many (SQLite allows 999 parameters in old builds)
_ID_BATCH = 500


@dataclass(slots=True)
class ChannelEntry:
    """One channel as the relay reads it. ``keys`` are the keys it may send: all of a
    plain channel's (newline-separated), only the enabled ones of a multi-key channel."""

    id: int
    type: int
    name: str
    keys: list[str]
    base_url: str
    status: int
    weight: int
    priority: int
    models: list[str]
    groups: list[str]
    model_mapping: dict[str, str]
    status_code_mapping: dict[str, str]
    auto_ban: bool
    other: str
    setting: dict[str, Any]
    header_override: dict[str, str]
    param_override: dict[str, Any]
    tag: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``polling`` rotates the keys round-robin (per worker), anything else picks one at random
    key_mode: str = "random"
    multi_key: bool = False
    #: the parameter and header overrides, system prompt and proxy, compiled at load
    features: ChannelFeatures = NO_FEATURES
    #: a multi-key channel's enabled keys → their index in the stored key list
    key_index: dict[str, int] = field(default_factory=dict)

    def pick_key(self, skip: Callable[[str], bool] | None = None) -> str:
        """The key for the next call: new-api's ``GetNextEnabledKey``. ``skip`` leaves keys
        out (cooling down, or already tried by this request); when it leaves none, the
        keys are offered as if it were not given."""
        keys = self.keys
        if len(keys) == 1:
            return keys[0]
        if not keys:
            raise GatewayError(503, f"channel {self.id} has no enabled key", code="channel:no_available_key")
        if skip is not None:
            keys = [k for k in keys if not skip(k)] or keys
            if len(keys) == 1:
                return keys[0]
        if self.key_mode == "polling":
            turn = _polling_cursor.get(self.id, -1) + 1
            _polling_cursor[self.id] = turn % len(keys)
            return keys[turn % len(keys)]
        return random.choice(keys)


def _json_obj(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def split_list(text: str | None, sep: str = ",") -> list[str]:
    return [p.strip() for p in (text or "").split(sep) if p.strip()]


def key_lines(text: str | None) -> list[str]:
    """The keys of a channel's key text: one a line, except JSON (new-api's form for
    service-account keys): an object, pasted as its file came (over many lines), is one
    key, an array of objects one key per object, each kept as one line of compact JSON."""
    stripped = (text or "").strip()
    if stripped[:1] in ("{", "["):
        try:
            value = jsonutil.loads(stripped)
        except jsonutil.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return [jsonutil.dumps_str(value)]
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return [jsonutil.dumps_str(v) for v in value]
    return split_list(text, "\n")


class TokenRow(Protocol):
    """What :func:`token_entry` reads of a ``tokens`` row: a model instance, or the plain
    columns (:data:`TOKEN_COLUMNS`) of a whole-table load, 3x cheaper than instances."""

    @property
    def id(self) -> int: ...
    @property
    def user_id(self) -> int: ...
    @property
    def key_hash(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def expired_time(self) -> int: ...
    @property
    def unlimited_quota(self) -> bool: ...
    @property
    def model_limits_enabled(self) -> bool: ...
    @property
    def model_limits(self) -> str: ...
    @property
    def allow_ips(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def rpm_limit(self) -> int: ...
    @property
    def tpm_limit(self) -> int: ...
    @property
    def max_parallel_requests(self) -> int: ...


TOKEN_COLUMNS = ("id", "user_id", "key_hash", "name", "status", "expired_time", "unlimited_quota",
                 "model_limits_enabled", "model_limits", "allow_ips", "group", "rpm_limit", "tpm_limit",
                 "max_parallel_requests")


def token_entry(row: TokenRow) -> TokenEntry:
    limits = frozenset(split_list(row.model_limits)) if row.model_limits_enabled else None
    ips: list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None = None
    if row.allow_ips.strip():
        ips = []
        for part in split_list(row.allow_ips.replace(",", "\n"), "\n"):
            try:
                ips.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                log.warning("token %s: ignoring bad allow_ips entry %r", row.id, part)
    return TokenEntry(
        id=row.id, user_id=row.user_id, key_hash=row.key_hash, name=row.name, status=row.status,
        expired_time=row.expired_time, unlimited=row.unlimited_quota, model_limits=limits,
        allow_ips=ips, group=row.group, rpm_limit=row.rpm_limit, tpm_limit=row.tpm_limit,
        max_parallel_requests=row.max_parallel_requests,
    )


def user_entry(row: m.User) -> UserEntry:
    return UserEntry(id=row.id, username=row.username, role=row.role, status=row.status,
                     group=row.group or "default", session_version=row.session_version)


def key_statuses(info: dict[str, Any]) -> dict[int, int]:
    """``channel_info.multi_key_status_list`` as ``{index: status}``; entries that are
    not an index and a status are ignored (enabled)."""
    raw = info.get("multi_key_status_list")
    statuses: dict[int, int] = {}
    if isinstance(raw, dict):
        for index, status in raw.items():
            if str(index).isdigit() and status in (KEY_MANUALLY_DISABLED, KEY_AUTO_DISABLED):
                statuses[int(index)] = status
    return statuses


def channel_entry(row: m.Channel, box: SecretBox, key: str | None = None) -> ChannelEntry:
    """The channel as the relay reads it; ``key``: the key text of a channel not stored (yet),
    instead of the stored one."""
    if key is None:
        key = box.decrypt(row.key_enc, f"channel:{row.id}") if row.key_enc else ""
    keys = key_lines(key)
    info = _json_obj(row.channel_info)
    multi_key = info.get("is_multi_key") is True
    status = row.status
    # new-api's "other settings" (a key's format, API versions) over the channel's setting: one object
    setting = {**_json_obj(row.setting), **_json_obj(row.settings)} if row.settings else _json_obj(row.setting)
    key_index: dict[str, int] = {}
    if multi_key:
        disabled = key_statuses(info)
        for i, k in enumerate(keys):
            if i not in disabled:
                key_index.setdefault(k, i)
        keys = [k for i, k in enumerate(keys) if i not in disabled]
        if not keys and status == m.CHANNEL_ENABLED:
            status = m.CHANNEL_AUTO_DISABLED  # every key disabled: nothing to route to
    return ChannelEntry(
        id=row.id, type=row.type, name=row.name, keys=keys or ([] if multi_key else [""]),
        base_url=row.base_url.rstrip("/"), status=status, weight=row.weight,
        priority=row.priority, models=split_list(row.models), groups=split_list(row.group) or ["default"],
        model_mapping={str(k): str(v) for k, v in _json_obj(row.model_mapping).items()},
        status_code_mapping={str(k): str(v) for k, v in _json_obj(row.status_code_mapping).items()},
        auto_ban=bool(row.auto_ban), other=row.other or "", setting=setting,
        header_override={str(k): str(v) for k, v in _json_obj(row.header_override).items()},
        param_override=_json_obj(row.param_override), tag=row.tag,
        key_mode="polling" if info.get("multi_key_mode") == "polling" else "random", multi_key=multi_key,
        features=compile_features(row.id, row.param_override, row.header_override, setting), key_index=key_index,
    )


class Snapshot(Generic[OptionsT]):
    """Everything the relay reads. Mutated only by ``load_*`` methods (called by the
    change feed); readers never await, so they always see a consistent entry.

    The options are the ``registry``'s, built by ``make_options`` (the assembly layer's
    class, whose typed attributes the layers that own the options add: see
    :mod:`faregate.state.options`); plain :class:`Options` knows them by name only."""

    def __init__(self, box: SecretBox, registry: OptionRegistry,
                 make_options: Callable[[dict[str, str], OptionRegistry], OptionsT]) -> None:
        self.box = box
        self.registry = registry
        self.make_options = make_options
        self.tokens_by_hash: dict[str, TokenEntry] = {}
        self.tokens_by_id: dict[int, TokenEntry] = {}
        self.users: dict[int, UserEntry] = {}
        self.channels: dict[int, ChannelEntry] = {}
        self.route_index = RouteIndex()
        #: bumped by every change to the channels or the routing index (what a cache of them checks)
        self.routes_changes = 0
        self.options: OptionsT = make_options({}, self.registry)
        self.loaded_at = 0.0

    # -- loading --------------------------------------------------------------------
    async def load_all(self) -> None:
        tokens = {}
        # 100,000 keys: plain columns, not model instances (most of a start's time otherwise)
        for values in await m.Token.all().values(*TOKEN_COLUMNS):
            entry = token_entry(SimpleNamespace(**values))
            tokens[entry.key_hash] = entry
        self.tokens_by_hash = tokens
        self.tokens_by_id = {t.id: t for t in tokens.values()}
        users = {row.id: user_entry(row) for row in await m.User.all()}
        for user_id, ended in (await ended_sessions_by_user()).items():
            if user_id in users:
                users[user_id].ended_sessions = ended
        self.users = users
        self.channels = {row.id: channel_entry(row, self.box) for row in await m.Channel.all()}
        await self.load_options()
        await self.rebuild_routes()
        self.loaded_at = time.time()

    async def load_token(self, token_id: int) -> None:
        # the row first: while it is read, requests with the key still find the old entry
        # (taking it out before the read refused them with 401 for the read's duration)
        row = await m.Token.get_or_none(id=token_id)
        old = self.tokens_by_id.pop(token_id, None)
        if old is not None:
            self.tokens_by_hash.pop(old.key_hash, None)
        if row is not None:
            entry = token_entry(row)
            self.tokens_by_hash[entry.key_hash] = entry
            self.tokens_by_id[entry.id] = entry

    async def load_user(self, user_id: int) -> None:
        row = await m.User.get_or_none(id=user_id)
        if row is None:
            self.users.pop(user_id, None)
        else:
            entry = user_entry(row)
            entry.ended_sessions = await ended_sessions(user_id)
            self.users[user_id] = entry

    async def load_channel(self, channel_id: int) -> None:
        await self.load_channels([channel_id])

    async def load_channels(self, channel_ids: Iterable[int]) -> None:
        """Reload these channels and their abilities, and recompute only the routes they were
        or are in (the rest of the index keeps its objects)."""
        ids = sorted(set(channel_ids))
        rows: dict[int, m.Channel] = {}
        pairs: dict[int, set[tuple[str, str]]] = {channel_id: set() for channel_id in ids}
        for start in range(0, len(ids), _ID_BATCH):  # within any database's bound on query parameters
            batch = ids[start:start + _ID_BATCH]
            rows.update((row.id, row) for row in await m.Channel.filter(id__in=batch))
            for channel_id, group, model in await m.Ability.filter(channel_id__in=batch, enabled=True) \
                    .values_list("channel_id", "group", "model"):
                pairs[channel_id].add((group, model))
        # no await from here on: readers see the old index or the new one
        for channel_id in ids:
            row = rows.get(channel_id)
            if row is None:
                self.channels.pop(channel_id, None)
            else:
                self.channels[channel_id] = channel_entry(row, self.box)
        self.route_index.update(pairs, self.channels)
        self.routes_changes += 1

    async def load_options(self) -> None:
        self.options = self.make_options({row.key: row.value for row in await m.Option.all()}, self.registry)

    async def rebuild_routes(self) -> None:
        """Build the whole routing index from the abilities table."""
        abilities = await m.Ability.filter(enabled=True).values_list("channel_id", "group", "model")
        self.route_index = RouteIndex.build(abilities, self.channels)
        self.routes_changes += 1

    def drop_channel(self, channel_id: int) -> None:
        """Take a channel out of routing in this worker right away (synchronously), before
        the database and the change feed catch up."""
        channel = self.channels.get(channel_id)
        if channel is not None:
            channel.status = m.CHANNEL_AUTO_DISABLED
            self.route_index.refresh(channel_id, self.channels)
            self.routes_changes += 1

    # -- reading ----------------------------------------------------------------------
    @property
    def routes(self) -> Routes:
        """group → model → priority levels (highest first), each a list of channels."""
        return self.route_index.routes

    def levels(self, group: str, model: str) -> list[list[ChannelEntry]]:
        return self.route_index.routes.get(group, {}).get(model, [])

    def models_for_group(self, group: str) -> list[str]:
        return sorted(self.routes.get(group, {}))
