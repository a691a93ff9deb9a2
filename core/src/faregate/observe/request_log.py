"""The request log: one line per exchange with who, what, where and how it ended, never
a key or a body. Level info, warning when the gateway answered 5xx. Built ready-made
(one f-string, no ``%`` arguments) and marked safe, so the redacting filter does not
scan it again: its free text (the key's name, the model a client asked for) is checked here."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from typing import Any

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
    record = make_record(level, f"request {report.request_id} {report.route} user={report.user_id} "
                                f"key={key_name!r} model={model!r} channel={report.channel_id} "
                                f"status={report.status} attempts={report.attempts} end={report.end_reason} "
                                f"ms={ms} overhead_ms={overhead_ms}")
    record.__dict__.update(
        event="request", redacted=True, request_id=report.request_id, route=report.route, user_id=report.user_id,
        key_name=key_name, model=model, channel_id=report.channel_id, status=report.status,
        attempts=report.attempts, end_reason=report.end_reason, stream=report.stream, latency_ms=ms,
        overhead_ms=overhead_ms, input_tokens=report.input_tokens, output_tokens=report.output_tokens,
        quota=report.quota)
    log.handle(record)


#: the fields every request line's record shares, per (process, logging's switches): see make_record
_SHARED: dict[tuple[bool, bool, bool], dict[str, Any]] = {}
_new_record = logging.LogRecord.__new__
os.register_at_fork(after_in_child=_SHARED.clear)  # a child's records carry its own process id


def make_record(level: int, line: str) -> logging.LogRecord:
    """``log.makeRecord(…)`` for the request line: the fields that are the same on every line
    (the logger's name, where from, the thread and process) copied from a record made the usual
    way once, the time and level set per line, as ``LogRecord.__init__`` sets them
    (core/tests/test_request_log_record.py compares the two). ``LogRecord.__init__`` asked the
    OS for the process id and split a path for every line. A record factory of someone else's
    (``logging.setLogRecordFactory``) is used as it is."""
    if logging.getLogRecordFactory() is not logging.LogRecord:
        return log.makeRecord(log.name, level, "(unknown file)", 0, line, (), None, "(unknown function)")
    switches = (logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    shared = _SHARED.get(switches)
    if shared is None:
        shared = dict(logging.LogRecord(log.name, level, "(unknown file)", 0, "", (), None,
                                        "(unknown function)").__dict__)
        _SHARED.clear()
        _SHARED[switches] = shared
    record = _new_record(logging.LogRecord)
    fields = record.__dict__
    fields.update(shared)
    now = time.time()
    fields.update(msg=line, levelno=level, levelname=logging.getLevelName(level), created=now,
                  msecs=int((now - int(now)) * 1000) + 0.0,
                  relativeCreated=(now - logging._startTime) * 1000)  # type: ignore[attr-defined]  # logging's own start
    if switches[0]:  # logThreads (off in the gateway's own logging): whichever thread settles
        fields.update(thread=threading.get_ident(), threadName=threading.current_thread().name)
    return record


#: every redaction pattern needs one of these: text without any cannot hold a key-shaped secret
_MAYBE_SECRET = re.compile(r"sk-|[=:\s]")


def _safe(text: str) -> str:
    """``text``, redacted if it could hold something key-shaped (the common case: one search)."""
    return redact(text) if _MAYBE_SECRET.search(text) else text
