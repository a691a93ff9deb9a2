"""What a channel may hold, checked before it is stored: a type some installed plugin
serves, an http(s) base URL without credentials in it, header overrides that cannot
smuggle requests (no Host, no hop-by-hop headers, no CR/LF)."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from faregate import jsonutil
from faregate.management.common import BadInput

#: set by the HTTP client from the URL and body; an override would desynchronise the request
FORBIDDEN_HEADERS = frozenset({
    "host", "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "content-length",
})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 field-name
_BAD_VALUE = re.compile(r"[\r\n\x00]")


def _refuse(message: str) -> BadInput:
    return BadInput(message, status=400)


def check_type(channel_type: int, installed: Collection[int]) -> None:
    if channel_type not in installed:
        names = ", ".join(str(t) for t in sorted(installed)) or "none"
        raise _refuse(f"type {channel_type} is not served by any installed plugin (installed types: {names})")


def check_base_url(url: str) -> None:
    if not url:
        return  # the provider's default
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise _refuse("base_url must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise _refuse("base_url is not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise _refuse("base_url must be an http:// or https:// URL")
    if "@" in parts.netloc:
        raise _refuse("base_url must not contain user:password@ (put credentials in the key)")
    if not host:
        raise _refuse("base_url has no host")
    if parts.query or parts.fragment:
        raise _refuse("base_url must not have a query string or fragment")


def check_header_override(text: str | None) -> None:
    if not text:
        return
    overrides: Any = jsonutil.loads(text)  # channel_fields checked it is a JSON object
    for name, value in overrides.items():
        if not _TOKEN.match(name):
            raise _refuse(f"header_override: {name[:40]!r} is not a valid header name")
        if name.lower() in FORBIDDEN_HEADERS:
            raise _refuse(f"header_override: {name} cannot be overridden")
        if not isinstance(value, str):
            raise _refuse(f"header_override: the value of {name} must be a string")
        if _BAD_VALUE.search(value):
            raise _refuse(f"header_override: the value of {name} must not contain CR, LF or NUL")


def check_channel(fields: dict[str, Any], installed: Collection[int], *, creating: bool) -> None:
    """Raise :class:`BadInput` (400) for what no channel may hold; ``fields`` are the
    columns being written (all of them when ``creating``)."""
    if "type" in fields or creating:
        check_type(int(fields.get("type", 0)), installed)
    check_base_url(fields.get("base_url") or "")
    check_header_override(fields.get("header_override"))
