"""The form of a URL the gateway is told to call (a channel's base URL, an option naming a
site to fetch from), checked before any address is: one rule for every such setting."""

from __future__ import annotations

from urllib.parse import urlsplit


def url_form_problem(url: str, *, query: bool = False) -> str | None:
    """Why ``url`` is not an http(s) URL with a host and nothing hidden in it (spaces or
    control characters, ``user:password@``, a ``?`` or ``#`` (even an empty query string or
    fragment) unless ``query``, a bad port), as the end of a sentence naming the setting;
    None when its form is fine. A URL the gateway appends paths to must not take ``query``."""
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        return "must not contain spaces or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "must be an http:// or https:// URL"
    if "@" in parts.netloc:
        return "must not contain user:password@"
    if not parts.hostname:
        return "has no host"
    # the characters, not urlsplit's parts: "https://h/v1?" has an empty query, yet a path
    # appended to it ("…/v1?/chat/completions") would become one
    if not query and ("?" in url or "#" in url):
        return "must not have a query string or fragment (no ? or #)"
    return None
