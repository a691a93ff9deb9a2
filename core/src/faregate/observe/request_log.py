"""The request log: one line per exchange with who, what, where and how it ended, never
a key or a body. Level info, warning when the gateway answered 5xx. Built ready-made
(one f-string, no ``%`` arguments) and marked safe, so the redacting filter does not
scan it again: its free text (the key's name, the model a client asked for) is checked here."""

from __future__ import annotations

import logging
import re

from faregate.observe.report import ExchangeReport
from faregate.security.redact import redact

log = logging.getLogger("faregate.request")


def log_request(report: ExchangeReport) -> None:
    level = logging.WARNING if report.status >= 500 else logging.INFO
    if not log.isEnabledFor(level):
        return
    ms = round(report.seconds * 1000, 1)
    overhead_ms = round(report.overhead_seconds * 1000, 2)
    key_name, model = _safe(report.key_name), _safe(report.model)
    # the record made and handed over as ``log.log(level, line, extra=…)`` would, without its
    # generic steps (the caller lookup, a clash test per extra field): one per request
    record = log.makeRecord(log.name, level, "(unknown file)", 0,
                            f"request {report.request_id} {report.route} user={report.user_id} key={key_name!r} "
                            f"model={model!r} channel={report.channel_id} status={report.status} "
                            f"attempts={report.attempts} end={report.end_reason} ms={ms} overhead_ms={overhead_ms}",
                            (), None, "(unknown function)")
    record.__dict__.update(
        event="request", redacted=True, request_id=report.request_id, route=report.route, user_id=report.user_id,
        key_name=key_name, model=model, channel_id=report.channel_id, status=report.status,
        attempts=report.attempts, end_reason=report.end_reason, stream=report.stream, latency_ms=ms,
        overhead_ms=overhead_ms, input_tokens=report.input_tokens, output_tokens=report.output_tokens,
        quota=report.quota)
    log.handle(record)


#: every redaction pattern needs one of these: text without any cannot hold a key-shaped secret
_MAYBE_SECRET = re.compile(r"sk-|[=:\s]")


def _safe(text: str) -> str:
    """``text``, redacted if it could hold something key-shaped (the common case: one search)."""
    return redact(text) if _MAYBE_SECRET.search(text) else text
