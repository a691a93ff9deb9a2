"""Payment callbacks in Hypercorn's access log (the optional ``access_log`` setting).

A callback's query string is the gateway's message: Epay's GET notify carries its signature,
the money and the order number there, and a line is written whether or not the callback then
verifies. Hypercorn's default line names the path only, but a format with ``%(R)s``, ``%(Uq)s``
or ``%(q)s`` (or a later Hypercorn whose default has it) would write that query before anything
checked it. :class:`CallbackQueryFilter` blanks the query of the payment callback paths on every
access-log line, whatever the format; other paths keep theirs (the key redaction of
:mod:`faregate.security.redact` still applies to every line).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, MutableMapping

ACCESS_LOGGER = "hypercorn.access"
REDACTED = "[REDACTED]"

#: the payment callback paths served by this process (every provider's ``routes.webhook``)
_callback_paths: set[str] = set()


class CallbackQueryFilter(logging.Filter):
    """Blanks the query string of a payment callback on a Hypercorn access-log record (its
    atoms: ``q`` the query, ``Uq`` and ``R`` the path and request line with it)."""

    def filter(self, record: logging.LogRecord) -> bool:
        atoms = record.args
        if not isinstance(atoms, MutableMapping) or _plain(atoms.get("U")) not in _callback_paths:
            return True
        query = atoms.get("q")
        if isinstance(query, str) and query and query != "-":
            atoms["q"] = REDACTED
            for key in ("Uq", "R"):
                value = atoms.get(key)
                if isinstance(value, str):
                    atoms[key] = value.replace("?" + query, "?" + REDACTED, 1)
        return True


def _plain(path: object) -> object:
    # every route answers with a trailing slash too (faregate.edge.routes.lenient_slashes)
    return path.rstrip("/") or "/" if isinstance(path, str) else path


def protect(paths: Iterable[str]) -> None:
    """Blank the query of ``paths`` on the access log from now on, with or without a trailing
    slash. The filter goes first on the logger, before the key-redacting one, which turns a
    record it changes into plain text."""
    _callback_paths.update(str(_plain(p)) for p in paths)
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(f, CallbackQueryFilter) for f in logger.filters):
        logger.filters.insert(0, CallbackQueryFilter())
