"""What a channel may hold, checked before it is stored: a type some installed plugin
serves, an http(s) base URL without credentials in it and not pointing at a cloud
metadata or link-local address (nor, with ``FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny``,
at a loopback or private one), header overrides that cannot smuggle requests (no Host,
no hop-by-hop headers, no CR/LF)."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from faregate import jsonutil
from faregate.management.common import BadInput
from faregate.net import (
    AddressCategory,
    BlockedAddress,
    FetchError,
    Resolver,
    resolve_checked,
    system_resolver,
    url_form_problem,
)
from faregate.settings import Settings

#: set by the HTTP client from the URL and body; an override would desynchronise the request
FORBIDDEN_HEADERS = frozenset({
    "host", "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "content-length",
})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 field-name
_BAD_VALUE = re.compile(r"[\r\n\x00]")

#: where a local model server lives (vLLM, Ollama, the test suite's fakes): allowed unless the setting denies
PRIVATE_CATEGORIES = frozenset({AddressCategory.LOOPBACK, AddressCategory.PRIVATE, AddressCategory.UNSPECIFIED,
                                AddressCategory.SHARED, AddressCategory.NON_GLOBAL})
#: a save-time lookup must not hold up the admin's request; a name that does not answer in time is allowed
RESOLVE_TIMEOUT = 2.0


def _refuse(message: str) -> BadInput:
    return BadInput(message, status=400)


def check_type(channel_type: int, installed: Collection[int]) -> None:
    if channel_type not in installed:
        names = ", ".join(str(t) for t in sorted(installed)) or "none"
        raise _refuse(f"type {channel_type} is not served by any installed plugin (installed types: {names})")


async def check_base_url(url: str, *, private_addresses: str = "allow",
                         resolver: Resolver = system_resolver) -> None:
    """Form, then address: cloud metadata, link-local, multicast, broadcast and reserved
    addresses are refused, given literally (any IPv4 spelling, IPv4-mapped IPv6 …) or by
    a name resolving to one; loopback and private ones only when ``private_addresses``
    is ``deny``. A name that does not resolve now is allowed: the upstream may be
    reachable only later (the relay connects to admin-configured channels unguarded)."""
    if not url:
        return  # the provider's default
    problem = url_form_problem(url)
    if problem is not None:
        hint = " (put credentials in the key)" if "user:password@" in problem else ""
        raise _refuse(f"base_url {problem}{hint}")
    host = urlsplit(url).hostname or ""
    allowed = PRIVATE_CATEGORIES if private_addresses == "allow" else frozenset()
    try:
        await resolve_checked(host, resolver, allow=allowed, timeout=RESOLVE_TIMEOUT)
    except BlockedAddress as exc:
        hint = " (FAREGATE_CHANNEL_PRIVATE_ADDRESSES=deny)" if exc.category in PRIVATE_CATEGORIES else ""
        raise _refuse(f"base_url: {exc.message}{hint}") from None
    except FetchError:
        pass  # does not resolve (yet)


def check_header_override(text: str | None) -> None:
    if not text:
        return
    overrides: Any = jsonutil.loads(text)  # the body model checked it is a JSON object
    for name, value in overrides.items():
        if not _TOKEN.match(name):
            raise _refuse(f"header_override: {name[:40]!r} is not a valid header name")
        if name.lower() in FORBIDDEN_HEADERS:
            raise _refuse(f"header_override: {name} cannot be overridden")
        if not isinstance(value, str):
            raise _refuse(f"header_override: the value of {name} must be a string")
        if _BAD_VALUE.search(value):
            raise _refuse(f"header_override: the value of {name} must not contain CR, LF or NUL")


async def check_channel(fields: dict[str, Any], installed: Collection[int], *, creating: bool,
                        settings: Settings | None = None) -> None:
    """Raise :class:`BadInput` (400) for what no channel may hold; ``fields`` are the
    columns being written (all of them when ``creating``); ``settings`` gives
    ``channel_private_addresses`` (``allow`` without them)."""
    private_addresses = settings.get("channel_private_addresses", "allow") if settings is not None else "allow"
    if "type" in fields or creating:
        check_type(int(fields.get("type", 0)), installed)
    await check_base_url(fields.get("base_url") or "", private_addresses=private_addresses)
    check_header_override(fields.get("header_override"))
