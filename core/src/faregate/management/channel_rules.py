"""What a channel may hold, checked before it is stored: a type some installed plugin
serves, an http(s) base URL without credentials in it and not pointing at a cloud
metadata or link-local address (nor, with ``FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny``,
at a loopback or private one), header overrides that cannot smuggle requests (no Host,
no hop-by-hop headers, no CR/LF), and keys of the shape their provider reads
(:meth:`Provider.check_key`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from faregate import jsonutil
from faregate.contracts import Provider
from faregate.management.common import BadInput
from faregate.net import (
    PRIVATE_CATEGORIES,
    AddressPolicy,
    BlockedAddress,
    FetchError,
    allowed_categories,
    url_form_problem,
)
from faregate.net.proxy import proxy_host
from faregate.overrides.headers import compile_headers
from faregate.overrides.params import compile_override
from faregate.state.channel_features import check_setting as check_relay_setting

log = logging.getLogger("faregate")

#: set by the HTTP client from the URL and body; an override would desynchronise the request
FORBIDDEN_HEADERS = frozenset({
    "host", "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "content-length",
})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 field-name
_BAD_VALUE = re.compile(r"[\r\n\x00]")

#: a save-time lookup must not hold up the admin's request; a name that does not answer in time is allowed
RESOLVE_TIMEOUT = 2.0


def _refuse(message: str) -> BadInput:
    return BadInput(message, status=400)


def check_type(channel_type: int, installed: Mapping[int, Provider]) -> None:
    """A type some installed plugin serves; the refusal names each installed type by
    number and name (``1 openai, 3 azure, 14 anthropic, …``), as ``GET /api/channel/types``."""
    if channel_type not in installed:
        names = ", ".join(f"{t} {installed[t].channel_type_name(t)}" for t in sorted(installed)) or "none"
        raise _refuse(f"type {channel_type} is not served by any installed plugin (installed types: {names})")


async def check_base_url(url: str, addresses: AddressPolicy) -> None:
    """Form, then address: cloud metadata, link-local, multicast, broadcast and reserved
    addresses are refused, given literally (any IPv4 spelling, IPv4-mapped IPv6 …) or by
    a name resolving to one; loopback and private ones unless ``addresses`` allows them
    (``FAREGATE_CHANNEL_PRIVATE_ADDRESSES``). A name that does not resolve now is allowed:
    the upstream may be reachable only later. This is the early, friendly refusal; what
    protects is the same check at every connection the channel makes (the upstream client's)."""
    if not url:
        return  # the provider's default
    problem = url_form_problem(url)
    if problem is not None:
        hint = " (put credentials in the key)" if "user:password@" in problem else ""
        raise _refuse(f"base_url {problem}{hint}")
    host = urlsplit(url).hostname or ""
    try:
        await addresses.resolve(host, timeout=RESOLVE_TIMEOUT)
    except BlockedAddress as exc:
        hint = " (FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny)" if exc.category in PRIVATE_CATEGORIES else ""
        raise _refuse(f"base_url: {exc.message}{hint}") from None
    except FetchError:
        pass  # does not resolve (yet)


def check_header_override(text: str | None) -> None:
    """Header names and values, ``{api_key}`` / ``{client_header:…}`` placeholders and the
    pass-through keys (``*``, ``re:…``) as :mod:`faregate.overrides.headers` reads them."""
    try:
        compile_headers(text)
    except ValueError as exc:
        raise _refuse(f"header_override: {exc}") from None


def check_param_override(text: str | None) -> None:
    """new-api's legacy object or its ``operations``, each checked (modes, paths, regexes, bounds)."""
    try:
        compile_override(text)
    except ValueError as exc:
        raise _refuse(f"param_override: {exc}") from None


async def check_setting(text: str | None, addresses: AddressPolicy) -> None:
    """The channel settings read by the relay (``proxy``, ``system_prompt``,
    ``system_prompt_override``); a proxy's address as a base URL's (no cloud metadata,
    no link-local; private ones only when allowed)."""
    if not text:
        return
    try:
        checked = check_relay_setting(jsonutil.loads(text))  # the body model checked it is a JSON object
    except ValueError as exc:
        raise _refuse(str(exc)) from None
    proxy = checked.get("proxy")
    if proxy:
        try:
            await addresses.resolve(proxy_host(proxy), timeout=RESOLVE_TIMEOUT)
        except BlockedAddress as exc:
            raise _refuse(f"setting.proxy: {exc.message}") from None
        except FetchError:
            pass  # does not resolve (yet)


def key_settings(setting: str | None, other_settings: str | None = None) -> dict[str, Any]:
    """What a provider reads a key's format from: the channel's ``setting`` object and
    new-api's "other settings" (``settings``: ``vertex_key_type``, ``aws_key_type`` …, sent by
    new-api's console and found in its database), the latter winning."""
    merged: dict[str, Any] = {}
    for text in (setting, other_settings):
        try:
            value = jsonutil.loads(text) if text else None
        except jsonutil.JSONDecodeError:
            raise _refuse("settings must be a JSON object") from None
        if value is not None and not isinstance(value, dict):
            raise _refuse("settings must be a JSON object")
        merged.update(value or {})
    return merged


def relay_setting(setting: str | None, other_settings: str | None) -> str | None:
    """The one object providers and the relay read, as text to check: the channel's ``setting``
    with new-api's "other settings" (``settings``) over it; None when neither is given."""
    if setting is None and other_settings is None:
        return None
    return jsonutil.dumps_str(key_settings(setting, other_settings))


def check_keys(provider: Provider | None, keys: list[str], other: str, settings: Mapping[str, Any]) -> None:
    """Each key as its provider reads it (:meth:`Provider.check_key`): a 400 naming the
    field (and which key of several), the key itself never quoted."""
    if provider is None:
        return
    for i, key in enumerate(keys):
        try:
            problem = provider.check_key(key, other, settings)
        except Exception as exc:  # noqa: BLE001 - a plugin's bug must not become a 500
            log.warning("%s: checking a channel key failed: %s", provider.name, type(exc).__name__)
            problem = f"it could not be checked ({type(exc).__name__})"
        if problem:
            which = f" (key {i + 1} of {len(keys)})" if len(keys) > 1 else ""
            raise _refuse(f"key{which}: {problem}")


async def check_channel(fields: dict[str, Any], installed: Mapping[int, Provider], *, creating: bool,
                        addresses: AddressPolicy | None = None) -> None:
    """Raise :class:`BadInput` (400) for what no channel may hold; ``fields`` are the
    columns being written (all of them when ``creating``); ``addresses``: the gateway's
    channel address policy (``Gateway.channel_addresses``; without it, private addresses
    allowed and the system's resolver)."""
    addresses = addresses or AddressPolicy(allowed_categories("allow"))
    if "type" in fields or creating:
        check_type(int(fields.get("type", 0)), installed)
    await check_base_url(fields.get("base_url") or "", addresses)
    check_header_override(fields.get("header_override"))
    check_param_override(fields.get("param_override"))
    await check_setting(relay_setting(fields.get("setting"), fields.get("settings")), addresses)
