"""A channel's upstream model list (admin), as new-api's channel editor uses it: the models of a
channel not saved yet (``POST /api/channel/fetch_models``, root: ``{base_url, type, key}``), and
new-api's upstream model-update check (``/api/channel/upstream_updates/…``): which models the
upstream lists that the channel does not (to add), and which it lists no more (to remove),
kept in the channel's ``settings`` (``upstream_model_update_*``) until the admin applies or
ignores them.

Every upstream call goes the way a saved channel's model list goes
(:func:`~faregate.management.channel_probe.upstream_models`): through the channel's provider,
its proxy and the gateway's upstream client, whose connections keep the channel address policy;
the base URL of an unsaved channel is checked first as a saved one's is. Upstream names are
untrusted text: only names a channel can hold (at most 255 characters, no comma or control
character) are offered. new-api's periodic check (``CHANNEL_UPSTREAM_MODEL_UPDATE_TASK_ENABLED``)
is not run here: detection is the admin's call."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import Field
from quart import Blueprint, Response
from quart_schema import document_response, validate_request
from tortoise.transactions import in_transaction

from faregate import jsonutil
from faregate.db import models as m
from faregate.errors import GatewayError
from faregate.management.channel_bodies import ECHO_MAX, MODEL_NAME_MAX
from faregate.management.channel_probe import upstream_models
from faregate.management.channel_rules import check_channel
from faregate.management.channels import other_settings, rebuild_abilities
from faregate.management.common import INT32_MAX, BadInput, fail, gateway, ok, require
from faregate.management.openapi import Body, Ok, RowId, Shape
from faregate.overrides.params.safe_regex import compile_pattern
from faregate.principals import Principal
from faregate.state.snapshot import channel_entry, key_lines, split_list

blueprint = Blueprint("channel_models", __name__)

#: channels whose upstream the "all" routes ask at once
CONCURRENCY = 4
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# new-api's keys in a channel's settings
CHECK_ENABLED = "upstream_model_update_check_enabled"
DETECTED = "upstream_model_update_last_detected_models"
REMOVED = "upstream_model_update_last_removed_models"
IGNORED = "upstream_model_update_ignored_models"
CHECKED_AT = "upstream_model_update_last_check_time"


# ---- a channel not saved yet ------------------------------------------------------------------
class UnsavedChannel(Body):
    """new-api's ``{base_url, type, key}`` (its first key is asked); ``other`` for a type that
    reads it (a region, an API version)."""

    type: Annotated[int, Field(ge=0, le=INT32_MAX, description="new-api's channel type number")]
    key: Annotated[str, Field(min_length=1, max_length=ECHO_MAX)]
    base_url: Annotated[str, Field(max_length=512)] = ""
    other: Annotated[str, Field(max_length=ECHO_MAX)] = ""


@blueprint.post("/api/channel/fetch_models")
@require(m.ROLE_ROOT)
@validate_request(UnsavedChannel)
@document_response(Ok[list[str]])
async def fetch_unsaved_models(data: UnsavedChannel, me: Principal) -> Response:
    """The models the upstream of a channel being added lists, before it is saved."""
    gw = gateway()
    base_url = data.base_url.strip().rstrip("/")
    await check_channel({"type": data.type, "base_url": base_url, "other": data.other}, gw.providers, creating=True,
                        addresses=gw.channel_addresses)
    keys = key_lines(data.key)
    if not keys:
        raise BadInput("key: the channel key must not be empty", status=400)
    row = m.Channel(type=data.type, base_url=base_url, other=data.other, models="", group="default")
    try:
        return ok(_channel_names(await upstream_models(gw, channel_entry(row, gw.box, key=keys[0]))))
    except GatewayError as err:
        return fail(err.message)


# ---- names --------------------------------------------------------------------------------------
def _channel_names(names: Iterable[Any]) -> list[str]:
    """Names a channel can hold (an upstream's list is untrusted text), stripped, each once."""
    kept: dict[str, None] = {}
    for name in names:
        text = str(name).strip() if isinstance(name, str) else ""
        if text and len(text) <= MODEL_NAME_MAX and "," not in text and not _CONTROL.search(text):
            kept[text] = None
    return list(kept)


def _minus(names: Iterable[str], removed: Iterable[str]) -> list[str]:
    gone = set(removed)
    return [n for n in names if n not in gone]


def _within(names: Iterable[str], allowed: Iterable[str]) -> list[str]:
    keep = set(allowed)
    return [n for n in names if n in keep]


def _ignored(name: str, ignored: list[str]) -> bool:
    """new-api's ignore list: a name, or ``regex:<pattern>``; a pattern that is not a regex or
    could backtrack exponentially on a crafted upstream name matches nothing."""
    for entry in ignored:
        pattern = entry.removeprefix("regex:")
        if pattern is entry:
            if entry == name:
                return True
            continue
        try:
            if compile_pattern(pattern.strip(), "ignored model").search(name):
                return True
        except (ValueError, re.error):
            continue
    return False


def pending_changes(local: list[str], upstream: list[str], ignored: list[str],
                    mapping: dict[str, str]) -> tuple[list[str], list[str]]:
    """new-api's: the upstream's models the channel lacks (not covered by its models or a mapping
    target, not ignored) to add, and the channel's models upstream lacks (a mapping's source, a
    name of the gateway's own, stays) to remove."""
    covered = set(local) | set(mapping.values())
    add = [n for n in upstream if n not in covered and not _ignored(n, ignored)]
    listed = set(upstream)
    remove = [n for n in local if n not in listed and n not in mapping]
    return add, remove


# ---- the check ----------------------------------------------------------------------------------
def _settings(row: m.Channel) -> dict[str, Any]:
    try:
        value = jsonutil.loads(other_settings(row) or "{}")
    except jsonutil.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _listed(settings: dict[str, Any], key: str) -> list[str]:
    value = settings.get(key)
    return _channel_names(value) if isinstance(value, list) else []


def _mapping(row: m.Channel) -> dict[str, str]:
    try:
        value = jsonutil.loads(row.model_mapping) if row.model_mapping else {}
    except jsonutil.JSONDecodeError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


async def _save(row: m.Channel, settings: dict[str, Any], models: list[str] | None) -> None:
    """The channel's settings (and models, when given: its routing rows rebuilt) stored at once."""
    row.settings = jsonutil.dumps_str(settings)
    fields = ["settings"]
    if models is not None:
        row.models = ",".join(models)
        fields.append("models")
    async with in_transaction() as conn:
        await row.save(using_db=conn, update_fields=fields)
        if models is not None:
            await rebuild_abilities(row, conn)
    await gateway().feed.publish("channel", row.id)


async def detect(row: m.Channel) -> dict[str, Any]:
    """Ask the upstream, store what changed (and when it was asked, also when the ask failed)."""
    gw = gateway()
    settings = _settings(row)
    settings[CHECKED_AT] = int(time.time())
    try:
        upstream = _channel_names(await upstream_models(gw, channel_entry(row, gw.box)))
    except GatewayError:
        await _save(row, settings, None)
        raise
    add, remove = pending_changes(split_list(row.models), upstream, _listed(settings, IGNORED), _mapping(row))
    settings[DETECTED], settings[REMOVED] = add, remove
    await _save(row, settings, None)
    return {"channel_id": row.id, "channel_name": row.name, "add_models": add, "remove_models": remove,
            "last_check_time": settings[CHECKED_AT], "auto_added_models": 0}


async def apply(row: m.Channel, add: list[str], remove: list[str], ignore: list[str]) -> dict[str, Any]:
    """Take the chosen ones of the pending changes: add to and remove from the channel's models,
    and remember the ignored names; the rest stays pending."""
    settings = _settings(row)
    pending_add, pending_remove = _listed(settings, DETECTED), _listed(settings, REMOVED)
    add, ignore = _within(add, pending_add), _within(ignore, pending_add)
    remove = _minus(_within(remove, pending_remove), add)
    origin = split_list(row.models)
    models = _minus([*origin, *_minus(add, origin)], remove)
    settings[IGNORED] = _minus(list(dict.fromkeys([*_listed(settings, IGNORED), *ignore])), add)
    settings[DETECTED] = _minus(pending_add, [*add, *ignore])
    settings[REMOVED] = _minus(pending_remove, remove)
    settings[CHECKED_AT] = int(time.time())
    await _save(row, settings, models if models != origin else None)
    return {"id": row.id, "channel_name": row.name, "added_models": add, "removed_models": remove,
            "ignored_models": ignore, "remaining_models": settings[DETECTED],
            "remaining_remove_models": settings[REMOVED], "models": row.models, "settings": row.settings}


Names = Annotated[list[Annotated[str, Field(max_length=MODEL_NAME_MAX)]], Field(max_length=10_000)]


class UpstreamUpdate(Body):
    """``{id, add_models, remove_models, ignore_models}``: for ``apply``, each a subset of what
    ``detect`` found pending (anything else is left out); ``detect`` reads only ``id``."""

    id: RowId
    add_models: Names | None = None
    remove_models: Names | None = None
    ignore_models: Names | None = None


class Detected(Shape):
    channel_id: int
    channel_name: str
    add_models: list[str]
    remove_models: list[str]
    last_check_time: int
    auto_added_models: int


class Applied(Shape):
    id: int
    channel_name: str
    added_models: list[str]
    removed_models: list[str]
    ignored_models: list[str]
    remaining_models: list[str]
    remaining_remove_models: list[str]
    models: str
    settings: str


async def _channel(channel_id: int) -> m.Channel:
    row = await m.Channel.get_or_none(id=channel_id)
    if row is None:
        raise BadInput("channel not found")
    return row


@blueprint.post("/api/channel/upstream_updates/detect")
@require(m.ROLE_ADMIN)
@validate_request(UpstreamUpdate)
@document_response(Ok[Detected])
async def detect_one(data: UpstreamUpdate, me: Principal) -> Response:
    """Ask the channel's upstream for its models now: ``{channel_id, channel_name, add_models,
    remove_models, last_check_time, auto_added_models}``."""
    try:
        return ok(await detect(await _channel(data.id)))
    except GatewayError as err:
        return fail(err.message)


@blueprint.post("/api/channel/upstream_updates/apply")
@require(m.ROLE_ADMIN)
@validate_request(UpstreamUpdate)
@document_response(Ok[Applied])
async def apply_one(data: UpstreamUpdate, me: Principal) -> Response:
    """Add, remove and ignore the chosen pending models: ``{id, added_models, removed_models,
    ignored_models, remaining_models, remaining_remove_models, models, settings}``."""
    row = await _channel(data.id)
    return ok(await apply(row, _channel_names(data.add_models or []),
                          _channel_names(data.remove_models or []), _channel_names(data.ignore_models or [])))


async def _checked_channels() -> list[m.Channel]:
    """The enabled channels whose settings turn the check on."""
    return [row for row in await m.Channel.filter(status=m.CHANNEL_ENABLED) if _settings(row).get(CHECK_ENABLED)]


@blueprint.post("/api/channel/upstream_updates/detect_all")
@require(m.ROLE_ADMIN)
async def detect_all(me: Principal) -> Response:
    """``detect`` on every enabled channel with the check on, a few at a time:
    ``{processed_channels, failed_channel_ids, detected_add_models, detected_remove_models,
    channel_detected_results}``."""
    limit = asyncio.Semaphore(CONCURRENCY)
    results: list[dict[str, Any]] = []
    failed: list[int] = []

    async def one(row: m.Channel) -> None:
        async with limit:
            try:
                results.append(await detect(row))
            except GatewayError:
                failed.append(row.id)

    await asyncio.gather(*(one(row) for row in await _checked_channels()))
    results.sort(key=lambda r: int(r["channel_id"]))
    return ok({"processed_channels": len(results), "failed_channel_ids": sorted(failed),
               "detected_add_models": sum(len(r["add_models"]) for r in results),
               "detected_remove_models": sum(len(r["remove_models"]) for r in results),
               "channel_detected_results": results})


@blueprint.post("/api/channel/upstream_updates/apply_all")
@require(m.ROLE_ADMIN)
async def apply_all(me: Principal) -> Response:
    """Apply every pending change of every enabled channel with the check on: ``{processed_channels,
    added_models, removed_models, failed_channel_ids, results}``."""
    results = []
    for row in await _checked_channels():
        settings = _settings(row)
        add, remove = _listed(settings, DETECTED), _listed(settings, REMOVED)
        if add or remove:
            done = await apply(row, add, remove, [])
            results.append({"channel_id": row.id, "channel_name": row.name, "added_models": done["added_models"],
                            "removed_models": done["removed_models"], "remaining_models": done["remaining_models"],
                            "remaining_remove_models": done["remaining_remove_models"]})
    return ok({"processed_channels": len(results), "added_models": sum(len(r["added_models"]) for r in results),
               "removed_models": sum(len(r["removed_models"]) for r in results), "failed_channel_ids": [],
               "results": results})
