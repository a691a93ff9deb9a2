"""A logging filter that removes secrets from every log line (keys in headers, query
strings and bodies)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

_PATTERNS = [
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-~+/=]{6,}"), r"\1[REDACTED]"),
    (re.compile(r"sk-[A-Za-z0-9_\-]{8,}"), "sk-[REDACTED]"),
    (re.compile(r"(?i)([?&](?:key|api_key|token)=)[^&\s\"']+"), r"\1[REDACTED]"),
    (re.compile(r"(?i)((?:x-api-key|x-goog-api-key|authorization|api[-_]key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]+"),
     r"\1[REDACTED]"),
]


#: shorter secrets are not replaced verbatim: they would garble ordinary words
MIN_SECRET_LENGTH = 6


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given ``secrets`` (a channel's keys, verbatim) and without
    anything shaped like a key. A composite key (new-api's ``AK|SK|region`` for AWS,
    ``apikey|region``, ``AppId|SecretId|SecretKey`` …) is redacted whole and by its parts:
    what goes upstream is one part (the API key as a bearer, the access key id in a
    signature), so that is what an upstream can echo."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, "[REDACTED]")
            if "|" in secret:
                for part in secret.split("|"):
                    if len(part) >= MIN_SECRET_LENGTH:
                        text = text.replace(part, "[REDACTED]")
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


class RedactingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "redacted", False):  # built from known-safe fields by its maker
            return True
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


def install(logger: logging.Logger | None = None) -> None:
    """Attach the filter to every handler of ``logger`` (root by default) and of
    hypercorn's loggers, so nothing reaches a sink unredacted."""
    targets = [logger or logging.getLogger(), logging.getLogger("hypercorn.access"),
               logging.getLogger("hypercorn.error")]
    for lg in targets:
        if not any(isinstance(f, RedactingFilter) for f in lg.filters):
            lg.addFilter(RedactingFilter())
        for handler in lg.handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())
