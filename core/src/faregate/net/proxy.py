"""A channel's outbound proxy (new-api's channel setting ``proxy``): an http, https,
socks4 or socks5 URL, optionally with ``user:password@``. The URL may hold a password, so
it is shown masked (:func:`mask_proxy`) in listings and logs."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from faregate import jsonutil

PROXY_SCHEMES = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")
SOCKS_SCHEMES = frozenset({"socks4", "socks4a", "socks5", "socks5h"})
MAX_PROXY_URL = 512
MASK = "***"


def check_proxy(url: str) -> str:
    """The proxy URL as the gateway uses it (trimmed, no trailing slash); ``ValueError``
    saying what is wrong (no scheme of :data:`PROXY_SCHEMES`, no host, a path, query or
    fragment, a bad port, spaces)."""
    url = url.strip()
    if len(url) > MAX_PROXY_URL:
        raise ValueError(f"must be at most {MAX_PROXY_URL} characters")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise ValueError("must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("is not a valid URL") from None
    if parts.scheme.lower() not in PROXY_SCHEMES:
        raise ValueError(f"must be a {', '.join(s + '://' for s in PROXY_SCHEMES)} URL")
    if not parts.hostname:
        raise ValueError("has no host")
    if parts.path not in ("", "/") or "?" in url or "#" in url:  # an empty query or fragment too
        raise ValueError("must not have a path, query string or fragment")
    if port == 0:
        raise ValueError("has no valid port")
    if MASK in (parts.password or ""):
        raise ValueError("holds a masked password: send the real one, or the channel's masked value unchanged")
    return url.rstrip("/")


def is_socks(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SOCKS_SCHEMES


def mask_proxy(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: safe to list and log."""
    if "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a proxy URL)"
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"{parts.username}:{MASK}@{host}", parts.path, parts.query, parts.fragment))


def proxy_host(url: str) -> str:
    return urlsplit(url).hostname or ""


def mask_setting(text: str) -> str:
    """A channel's ``setting`` text as listings show it: the proxy's password masked."""
    if not text or "@" not in text:
        return text
    try:
        setting = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        return text
    proxy = setting.get("proxy") if isinstance(setting, dict) else None
    if not isinstance(proxy, str) or mask_proxy(proxy) == proxy:
        return text
    return jsonutil.dumps_str({**setting, "proxy": mask_proxy(proxy)})


def unmask_setting(text: str, stored: str) -> str:
    """A ``setting`` sent back as it was listed (the UI echoes the channel it loaded): a
    proxy equal to the stored one masked is the stored one."""
    try:
        setting, old = jsonutil.loads(text), jsonutil.loads(stored or "{}")
    except jsonutil.JSONDecodeError:
        return text
    if not isinstance(setting, dict) or not isinstance(old, dict):
        return text
    proxy, kept = setting.get("proxy"), old.get("proxy")
    if isinstance(proxy, str) and isinstance(kept, str) and MASK in proxy and mask_proxy(kept) == proxy:
        return jsonutil.dumps_str({**setting, "proxy": kept})
    return text
