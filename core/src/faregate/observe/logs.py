"""Process logging: text for a terminal or JSON for machines (python-json-logger), at the
configured level, secrets redacted (messages and tracebacks: keys, URL and DSN
credentials, the configured database and Redis passwords). Records go through a queue to
one writer thread, so a slow stderr (a full pipe) never blocks the event loop; the thread
wakes every :data:`FLUSH_SECONDS` and writes what came (a wake-up per record cost the
event loop more than the line itself: GIL hand-offs). The queue holds at most
:data:`MAX_QUEUED_RECORDS`: when the writer cannot keep up, newer records are dropped,
counted, and the count written as one warning once the writer catches up (at most every
:data:`DROP_REPORT_SECONDS`). In JSON mode every line the process writes is one JSON
object (Hypercorn's lines, warnings, uncaught exceptions too)."""

from __future__ import annotations

import atexit
import contextvars
import logging
import queue
import sys
import threading
import time
from collections.abc import Iterable
from logging.handlers import QueueHandler
from types import TracebackType
from typing import Any

import orjson
from pythonjsonlogger.json import JsonFormatter

from faregate.observe.causes import scrub, url_secrets
from faregate.security.redact import RedactingFilter

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s"
#: the request being served, added to every record made while serving it
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("faregate_request_id", default="")

FLUSH_SECONDS = 0.05
#: records waiting for the writer at most (a few MB): a blocked stderr must not fill the memory
MAX_QUEUED_RECORDS = 10_000
#: dropped records are reported at most this often while they keep being dropped
DROP_REPORT_SECONDS = 10.0

_listener: _BatchWriter | None = None


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


class _DropRunningOn(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Running on ")


class _Scrub(logging.Filter):
    """URL and DSN credentials and the configured secrets out of a message (after
    :class:`RedactingFilter`, which takes the keys); records built from known-safe fields
    (the per-request line) are left alone."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.secrets = tuple(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "redacted", False):
            return True
        message = record.getMessage()
        cleaned = scrub(message, self.secrets)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


class _PassRecord(QueueHandler):
    """Hands the record itself to the writer thread: formatting (and redacting) happen
    there, not on the event loop. The writer is in this process, so nothing is pickled.
    A full queue drops the record and counts it (qsize is approximate across threads: the
    bound may be passed by a record or two, never by much)."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord], limit: int) -> None:
        super().__init__(records)
        self.records = records
        self.limit = limit
        self.dropped = 0

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record

    def enqueue(self, record: logging.LogRecord) -> None:
        if self.records.qsize() >= self.limit:
            self.dropped += 1
            return
        self.records.put_nowait(record)


class _BatchWriter:
    """Writes the queued records to the sink every :data:`FLUSH_SECONDS` (and at stop)."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord], sink: logging.Handler,
                 front: _PassRecord) -> None:
        self.records, self.sink, self.front = records, sink, front
        self.reported = 0  # drops already reported
        self.reported_at = -DROP_REPORT_SECONDS
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="faregate-log-writer", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.wait(FLUSH_SECONDS):
            self.drain()
        self.drain()

    def drain(self) -> None:
        while True:
            try:
                record = self.records.get_nowait()
            except queue.Empty:
                break
            self.sink.handle(record)
        self.report_drops(final=self.stopping.is_set())
        self.sink.flush()

    def report_drops(self, *, final: bool = False) -> None:
        dropped = self.front.dropped
        now = time.monotonic()
        if dropped == self.reported or (not final and now - self.reported_at < DROP_REPORT_SECONDS):
            return
        record = logging.LogRecord("faregate.logs", logging.WARNING, __file__, 0,
                                   "%d log line(s) dropped: the log writer could not keep up (stderr slow or "
                                   "blocked; %d dropped since the start)", (dropped - self.reported, dropped), None)
        record.request_id = ""
        self.reported, self.reported_at = dropped, now
        self.sink.handle(record)

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join()
        else:
            self.drain()


def _orjson_text(value: Any, **_: Any) -> str:
    """python-json-logger's serializer, with orjson (several times json.dumps' speed)."""
    return orjson.dumps(value, default=str).decode()


class _ScrubbedTracebacks:
    """Tracebacks and stacks as the formatter writes them, scrubbed: an exception's message
    is the driver's or the upstream's words, and may hold a key or a DSN's password. The
    time of a line is formatted once a second (``time.strftime`` per line was most of the
    formatting of the per-request line); what is written is logging's own format."""

    secrets: tuple[str, ...] = ()
    #: the second last formatted (``int(record.created)``) and its text
    _second: tuple[int, str] = (-1, "")
    #: whether the format has a time (logging searches the format string for it per line)
    _uses_time: bool | None = None

    def usesTime(self) -> bool:  # noqa: N802 - logging's name
        if self._uses_time is None:
            self._uses_time = bool(super().usesTime())  # type: ignore[misc]
        return self._uses_time

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging's name
        if datefmt:
            return super().formatTime(record, datefmt)  # type: ignore[misc,no-any-return]
        second, text = self._second
        if second != int(record.created):
            second = int(record.created)
            formatter: logging.Formatter = self  # type: ignore[assignment]  # mixed into one
            text = time.strftime(formatter.default_time_format, formatter.converter(record.created))
            self._second = (second, text)
        return "%s,%03d" % (text, record.msecs)  # logging's default_msec_format  # noqa: UP031

    def formatException(self, ei: Any) -> str:  # noqa: N802 - logging's name
        return scrub(super().formatException(ei), self.secrets)  # type: ignore[misc]

    def formatStack(self, stack_info: str) -> str:  # noqa: N802 - logging's name
        return scrub(super().formatStack(stack_info), self.secrets)  # type: ignore[misc]


class _TextFormatter(_ScrubbedTracebacks, logging.Formatter):
    pass


class _JsonFormatter(_ScrubbedTracebacks, JsonFormatter):
    pass


def formatter(fmt: str, secrets: Iterable[str] = ()) -> logging.Formatter:
    made: _TextFormatter | _JsonFormatter
    if fmt == "json":
        made = _JsonFormatter(JSON_FIELDS, rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                              json_serializer=_orjson_text)
    else:
        made = _TextFormatter(TEXT_FORMAT)
    made.secrets = tuple(secrets)
    return made


def configure(level: str = "info", fmt: str = "text", stream: Any = None, *, secrets: Iterable[str] = (),
              max_queued: int = MAX_QUEUED_RECORDS) -> None:
    """Route every logger (root, Hypercorn's, warnings) to one formatted, redacted sink.
    ``secrets`` (the database's and Redis's passwords) are removed wherever they appear.
    Safe to call again (a worker process re-configures what it inherited)."""
    global _listener
    stop()
    # the logging HOWTO's optimisations: no caller lookup (a stack walk per record), no
    # thread or multiprocessing names; none of them is in a line
    logging._srcfile = None
    logging.logThreads = False
    logging.logMultiprocessing = False
    secrets = tuple(secrets)
    sink = logging.StreamHandler(stream or sys.stderr)
    sink.setFormatter(formatter(fmt, secrets))
    sink.addFilter(RedactingFilter())
    sink.addFilter(_Scrub(secrets))
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    front = _PassRecord(records, max_queued)
    front.addFilter(_RequestIdFilter())
    root = logging.getLogger()
    root.handlers = [front]
    root.setLevel(level.upper())
    for name in ("hypercorn.error", "hypercorn.access"):
        hypercorn = logging.getLogger(name)
        hypercorn.handlers = []
        hypercorn.propagate = True
        hypercorn.setLevel(logging.NOTSET)
    # one line per fact: `faregate serve` says where it listens once, not again per worker
    # ("Running on …"); tortoise's "Tortoise-ORM shutdown" after every migration step or
    # short-lived connection says nothing an operator needs (its SQL stays at debug)
    if not any(isinstance(f, _DropRunningOn) for f in logging.getLogger("hypercorn.error").filters):
        logging.getLogger("hypercorn.error").addFilter(_DropRunningOn())
    logging.getLogger("tortoise").setLevel(logging.NOTSET if level.lower() == "debug" else logging.WARNING)
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    _listener = _BatchWriter(records, sink, front)
    _listener.start()
    atexit.register(stop)


def configure_from(settings: Any) -> None:
    """:func:`configure` as the core settings say (level, format), the database's and
    Redis's passwords and the gateway's own secrets removed from every line."""
    secrets = [*url_secrets(settings.db_url, settings.redis_url), settings.crypto_secret, settings.session_secret]
    configure(settings.log_level, settings.log_format, secrets=[s for s in secrets if s])


def stop() -> None:
    """Write out what is queued and stop the writer thread."""
    global _listener
    if _listener is not None:
        listener, _listener = _listener, None
        listener.stop()


def _log_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)
        return
    logging.getLogger("faregate").critical("uncaught exception", exc_info=(kind, value, tb))
    stop()
