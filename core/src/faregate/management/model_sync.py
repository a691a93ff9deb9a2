"""Model metadata from an upstream catalogue (new-api's ``sync_upstream``): the
``SyncUpstreamBase`` option names a site publishing ``api/newapi/models.json`` and
``vendors.json`` (or ``api/i18n/<locale>/newapi/…``), each a JSON array or
``{success, message, data: [...]}``. A preview tells what a sync would create, which
rows differ from upstream (conflicts) and which differ but are locked (``sync_official``
0: never overwritten); a sync creates the missing rows and overwrites only the fields
asked for. Also :func:`fetch_json`, the bounded outbound JSON fetch the uptime proxy uses."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from tortoise.exceptions import IntegrityError

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.common import gateway
from faregate.net import FetchError, GuardedFetcher
from faregate.net.errors import shown

#: what a sync may overwrite in a local row (new-api's field names)
OVERWRITABLE = ("description", "icon", "tags", "vendor", "name_rule", "status", "endpoints")
LOCALES = {"en": "en", "zh-cn": "zh-CN", "zh-tw": "zh-TW", "ja": "ja"}
#: module values so tests can shorten them (new-api: 10 MiB, 15 s)
MAX_BYTES = 10 << 20
FETCH_TIMEOUT = 15.0
MAX_ENTRIES = 50_000
#: bounds of what an upstream entry may hold (the columns', the API's input limits)
NAME_MAX, ICON_MAX, TAGS_MAX, VENDOR_MAX, TEXT_MAX = 255, 128, 255, 128, 10_000


class UpstreamError(Exception):
    """The upstream could not be read; ``message`` is ours (host and status at most),
    never the upstream's own text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


async def fetch_json(url: str, *, max_bytes: int, timeout: float) -> Any:
    """GET ``url`` through the guarded fetcher under the channel base URLs' policy
    (loopback and private addresses only while ``FAREGATE_CHANNEL_PRIVATE_ADDRESSES``
    allows them; metadata and link-local never) and parse the 200 answer as JSON."""
    policy = gateway().channel_addresses
    host = shown(urlsplit(url).hostname or "")
    try:
        async with GuardedFetcher(allow=policy.allow, resolver=policy.resolver, max_bytes=max_bytes, timeout=timeout,
                                  connect_timeout=min(timeout, 5.0)) as fetcher:
            got = await fetcher.fetch(url, headers={"Accept": "application/json"})
    except FetchError as exc:
        raise UpstreamError(exc.message) from None
    if got.status != 200:
        raise UpstreamError(f"{host} answered HTTP {got.status}")
    try:
        return jsonutil.loads(got.content)
    except jsonutil.JSONDecodeError:
        raise UpstreamError(f"the answer from {host} is not valid JSON") from None


@dataclass(frozen=True)
class Upstream:
    model_name: str
    description: str
    icon: str
    tags: str
    vendor_name: str
    name_rule: int
    status: int  # 0: not said (a local row keeps its own)
    endpoints: str  # JSON text, "" when not given


@dataclass
class Catalogue:
    models: dict[str, Upstream]
    vendors: dict[str, dict[str, Any]]
    ignored: int = 0  # malformed entries
    source: dict[str, str] = field(default_factory=dict)


def source(locale: str) -> dict[str, str]:
    base = str(gateway().snapshot.options.value("SyncUpstreamBase")).rstrip("/")
    chosen = LOCALES.get(locale.strip().lower(), "")
    prefix = f"{base}/api/i18n/{chosen}/newapi" if chosen else f"{base}/api/newapi"
    return {"locale": chosen, "models_url": f"{prefix}/models.json", "vendors_url": f"{prefix}/vendors.json"}


def _entries(payload: Any, what: str) -> list[Any]:
    data = payload.get("data") if isinstance(payload, dict) else payload
    if not isinstance(data, list):
        raise UpstreamError(f"the upstream {what} list is not a JSON array nor {{data: [...]}}")
    if len(data) > MAX_ENTRIES:
        raise UpstreamError(f"the upstream {what} list has more than {MAX_ENTRIES} entries")
    return data


def _text(item: dict[str, Any], key: str, limit: int) -> str:
    value = item.get(key)
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > limit or "\x00" in value:
        raise ValueError(key)
    return value.strip()


def _number(item: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = item.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ValueError(key)
    return value


def canonical_endpoints(value: Any) -> str:
    """Endpoints as canonical JSON text (so equal values compare equal), "" for none."""
    if isinstance(value, str):
        if not value.strip():
            return ""
        try:
            value = jsonutil.loads(value)
        except jsonutil.JSONDecodeError:
            raise ValueError("endpoints") from None
    if value is None:
        return ""
    if not isinstance(value, dict | list):
        raise ValueError("endpoints")
    text = jsonutil.dumps_str(value)
    if len(text) > TEXT_MAX:
        raise ValueError("endpoints")
    return text


def _model(item: Any) -> Upstream:
    if not isinstance(item, dict):
        raise ValueError("entry")
    name = _text(item, "model_name", NAME_MAX)
    if not name:
        raise ValueError("model_name")
    return Upstream(model_name=name, description=_text(item, "description", TEXT_MAX),
                    icon=_text(item, "icon", ICON_MAX), tags=_text(item, "tags", TAGS_MAX),
                    vendor_name=_text(item, "vendor_name", VENDOR_MAX), name_rule=_number(item, "name_rule", 0, 3),
                    status=1 if _number(item, "status", -(2**31), 2**31) else 0,
                    endpoints=canonical_endpoints(item.get("endpoints")))


async def load(locale: str) -> Catalogue:
    """Both lists, fetched together; a vendors list that fails is no failure (new-api:
    models then get vendors made from their names alone)."""
    src = source(locale)
    answers: tuple[Any, Any] = await asyncio.gather(
        fetch_json(src["models_url"], max_bytes=MAX_BYTES, timeout=FETCH_TIMEOUT),
        fetch_json(src["vendors_url"], max_bytes=MAX_BYTES, timeout=FETCH_TIMEOUT), return_exceptions=True)
    models_payload, vendors_payload = answers
    if isinstance(models_payload, BaseException):
        if isinstance(models_payload, UpstreamError):
            raise UpstreamError(f"could not read the upstream model list: {models_payload.message}")
        raise models_payload
    catalogue = Catalogue(models={}, vendors={}, source=src)
    for item in _entries(models_payload, "model"):
        try:
            up = _model(item)
        except ValueError:
            catalogue.ignored += 1
            continue
        catalogue.models.setdefault(up.model_name, up)
    try:
        vendors = [] if isinstance(vendors_payload, BaseException) else _entries(vendors_payload, "vendor")
    except UpstreamError:
        vendors = []
    for item in vendors:
        try:
            name = _text(item, "name", VENDOR_MAX) if isinstance(item, dict) else ""
            info = {"description": _text(item, "description", TEXT_MAX), "icon": _text(item, "icon", ICON_MAX)}
        except ValueError:
            continue
        if name:
            catalogue.vendors.setdefault(name, info)
    return catalogue


def _same_json(a: str, b: str) -> bool:
    try:
        return canonical_endpoints(a) == canonical_endpoints(b)
    except ValueError:
        return a.strip() == b.strip()


def differences(local: m.ModelMeta, up: Upstream, vendor_names: dict[int, str]) -> list[dict[str, Any]]:
    """The fields where ``local`` and upstream disagree, as new-api compares them; a status
    or endpoints upstream leaves unsaid is no conflict."""
    out: list[dict[str, Any]] = []
    for name, mine, theirs in (("description", local.description, up.description), ("icon", local.icon, up.icon),
                               ("tags", local.tags, up.tags),
                               ("vendor", vendor_names.get(local.vendor_id, ""), up.vendor_name)):
        if mine.strip() != theirs:
            out.append({"field": name, "local": mine, "upstream": theirs})
    if local.name_rule != up.name_rule:
        out.append({"field": "name_rule", "local": local.name_rule, "upstream": up.name_rule})
    if up.status and local.status != up.status:
        out.append({"field": "status", "local": local.status, "upstream": up.status})
    if up.endpoints and not _same_json(local.endpoints, up.endpoints):
        out.append({"field": "endpoints", "local": local.endpoints, "upstream": up.endpoints})
    return out


async def preview(catalogue: Catalogue, missing: Iterable[str]) -> dict[str, Any]:
    vendor_names = {v.id: v.name for v in await m.Vendor.all()}
    conflicts, locked = [], []
    for local in await m.ModelMeta.all().order_by("model_name"):
        up = catalogue.models.get(local.model_name)
        fields = differences(local, up, vendor_names) if up is not None else []
        if fields and local.sync_official:
            conflicts.append({"model_name": local.model_name, "fields": fields})
        elif fields:
            locked.append(local.model_name)
    missing = list(missing)
    return {"missing": [n for n in missing if n in catalogue.models],
            "unknown": [n for n in missing if n not in catalogue.models],
            "conflicts": conflicts, "locked": locked, "ignored": catalogue.ignored, "source": catalogue.source}


@dataclass
class SyncResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    created_vendors: int = 0
    vendor_ids: dict[str, int] = field(default_factory=dict)

    def data(self, src: dict[str, str]) -> dict[str, Any]:
        return {"created_models": len(self.created), "created_vendors": self.created_vendors,
                "updated_models": len(self.updated), "skipped_models": self.skipped, "created_list": self.created,
                "updated_list": self.updated, "source": src}


async def _vendor_id(name: str, catalogue: Catalogue, result: SyncResult, now: int) -> int:
    """The vendor called ``name``, made from the upstream's vendor entry when missing."""
    if not name:
        return 0
    if name not in result.vendor_ids:
        row = await m.Vendor.get_or_none(name=name)
        if row is None:
            info = catalogue.vendors.get(name, {})
            try:
                row = await m.Vendor.create(name=name, description=info.get("description", ""),
                                            icon=info.get("icon", ""), status=1,
                                            created_time=now, updated_time=now)
                result.created_vendors += 1
            except IntegrityError:  # another sync made it meanwhile
                row = await m.Vendor.get_or_none(name=name)
        result.vendor_ids[name] = row.id if row is not None else 0
    return result.vendor_ids[name]


async def apply(catalogue: Catalogue, create: Iterable[str], overwrite: Mapping[str, Collection[str]],
                now: int) -> SyncResult:
    """Create the ``create`` rows upstream knows; overwrite ``overwrite``'s fields (name →
    fields) of rows still open to sync (checked again in the UPDATE itself)."""
    result = SyncResult()
    for name in create:
        up = catalogue.models.get(name)
        if up is None or await m.ModelMeta.exists(model_name=name):
            result.skipped.append(name)
            continue
        vendor_id = await _vendor_id(up.vendor_name, catalogue, result, now)
        try:
            await m.ModelMeta.create(model_name=name, description=up.description, icon=up.icon, tags=up.tags,
                                     vendor_id=vendor_id, endpoints=up.endpoints, status=1, sync_official=1,
                                     name_rule=up.name_rule, created_time=now, updated_time=now)
            result.created.append(name)
        except IntegrityError:  # created meanwhile
            result.skipped.append(name)
    for name, fields in overwrite.items():
        up = catalogue.models.get(name)
        if up is None:
            result.skipped.append(name)
            continue
        values: dict[str, Any] = {f: getattr(up, f) for f in ("description", "icon", "tags", "name_rule", "endpoints")
                                  if f in fields}
        if "status" in fields and up.status:
            values["status"] = up.status
        if "vendor" in fields:
            values["vendor_id"] = await _vendor_id(up.vendor_name, catalogue, result, now)
        changed = await m.ModelMeta.filter(model_name=name, sync_official__not=0).update(**values, updated_time=now) \
            if values else 0
        (result.updated if changed else result.skipped).append(name)
    return result
