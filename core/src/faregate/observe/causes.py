"""A failure told to an operator (a log line, ``faregate doctor``, the importer): the
exception's class and message, and its root cause when another exception hides it, with
whatever may be a credential masked. Drivers put their connection parameters in their
messages (a DSN, ``password=…``, a URL with ``user:password@``); the settings' own
secrets (the database's and Redis's passwords) are removed verbatim as well."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from faregate.db.dsn import database_url
from faregate.security.redact import redact

MASK = "***"
#: a described failure is one line of at most this many characters
MAX_CAUSE = 400
#: how far down ``__cause__`` / ``__context__`` the root cause is looked for
MAX_DEPTH = 8

_CREDENTIALS = [
    # scheme://user:password@host: up to the last "@" before the path, a password may hold one
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/@:'\"]*):[^\s/'\"]*@"), rf"\1:{MASK}@"),
    # a Go MySQL DSN, as new-api's SQL_DSN: user:password@tcp(host:port)/db
    (re.compile(r"([^\s:@/'\"(]*):[^\s/'\"]*@(tcp|unix)\("), rf"\1:{MASK}@\2("),
    # password=…, 'password': '…', "passwd": "…" (libpq strings, drivers' parameter dicts)
    (re.compile(r"(?i)([\"']?\b(?:password|passwd|pwd|secret)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}&;)]+"), rf"\1{MASK}"),
]


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given ``secrets``, key-shaped strings
    (:func:`faregate.security.redact.redact`) or URL and DSN credentials."""
    text = redact(text, secrets)
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    return text


def url_secrets(*urls: str) -> list[str]:
    """The passwords in database or Redis URLs (a Go MySQL DSN too), as written and
    decoded, for :func:`scrub` to remove wherever they appear."""
    found: list[str] = []
    for url in urls:
        if not url:
            continue
        try:
            password = urlsplit(database_url(url)).password
        except ValueError:  # not a URL nor a DSN: nothing to take from it
            continue
        if password:
            found += [password, unquote(password)]
    return [secret for secret in dict.fromkeys(found) if secret]


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception behind ``exc`` (what a wrapper such as tortoise's
    ``DBConnectionError`` hides: "Access denied", "connection refused" …)."""
    seen = {id(exc)}
    for _ in range(MAX_DEPTH):
        inner = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        if inner is None or id(inner) in seen:
            break
        seen.add(id(inner))
        exc = inner
    return exc


def _said(exc: BaseException) -> str:
    message = " ".join(str(exc).split())  # one line
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def brief_failure(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """One line: the root cause alone (``Class: message``, what a wrapper such as tortoise's
    ``DBConnectionError`` hides behind its connection parameters), credentials masked."""
    text = scrub(_said(root_cause(exc)), secrets)
    return text if len(text) <= MAX_CAUSE else text[:MAX_CAUSE - 1] + "…"


def describe_failure(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """One line: ``Class: message`` (and ``(cause: Class: message)`` when the root cause
    says something else), credentials masked, at most :data:`MAX_CAUSE` characters."""
    text = _said(exc)
    root = root_cause(exc)
    if root is not exc and str(root) not in text:
        text += f" (cause: {_said(root)})"
    text = scrub(text, secrets)
    return text if len(text) <= MAX_CAUSE else text[:MAX_CAUSE - 1] + "…"
