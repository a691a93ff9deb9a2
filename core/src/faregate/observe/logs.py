"""Process logging: text for a terminal or JSON for machines (python-json-logger), at the
configured level, secrets redacted. Records go through a queue to one writer thread, so
a slow stderr (a full pipe) never blocks the event loop; the thread wakes every
:data:`FLUSH_SECONDS` and writes what came (a wake-up per record cost the event loop more
than the line itself: GIL hand-offs). In JSON mode every line the process writes is one
JSON object (Hypercorn's lines, warnings, uncaught exceptions too)."""

from __future__ import annotations

import atexit
import contextvars
import logging
import queue
import sys
import threading
from logging.handlers import QueueHandler
from types import TracebackType
from typing import Any

import orjson
from pythonjsonlogger.json import JsonFormatter

from faregate.security.redact import RedactingFilter

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(process)d %(message)s"
#: the request being served, added to every record made while serving it
request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("faregate_request_id", default="")

FLUSH_SECONDS = 0.05

_listener: _BatchWriter | None = None


class _RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        return True


class _PassRecord(QueueHandler):
    """Hands the record itself to the writer thread: formatting (and redacting) happen
    there, not on the event loop. The writer is in this process, so nothing is pickled."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class _BatchWriter:
    """Writes the queued records to the sink every :data:`FLUSH_SECONDS` (and at stop)."""

    def __init__(self, records: queue.SimpleQueue[logging.LogRecord], sink: logging.Handler) -> None:
        self.records, self.sink = records, sink
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
        self.sink.flush()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join()
        else:
            self.drain()


def _orjson_text(value: Any, **_: Any) -> str:
    """python-json-logger's serializer, with orjson (several times json.dumps' speed)."""
    return orjson.dumps(value, default=str).decode()


def formatter(fmt: str) -> logging.Formatter:
    if fmt == "json":
        return JsonFormatter(JSON_FIELDS, rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                             json_serializer=_orjson_text)
    return logging.Formatter(TEXT_FORMAT)


def configure(level: str = "info", fmt: str = "text", stream: Any = None) -> None:
    """Route every logger (root, Hypercorn's, warnings) to one formatted, redacted sink.
    Safe to call again (a worker process re-configures what it inherited)."""
    global _listener
    stop()
    # the logging HOWTO's optimisations: no caller lookup (a stack walk per record), no
    # thread or multiprocessing names; none of them is in a line
    logging._srcfile = None
    logging.logThreads = False
    logging.logMultiprocessing = False
    sink = logging.StreamHandler(stream or sys.stderr)
    sink.setFormatter(formatter(fmt))
    sink.addFilter(RedactingFilter())
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    front = _PassRecord(records)
    front.addFilter(_RequestIdFilter())
    root = logging.getLogger()
    root.handlers = [front]
    root.setLevel(level.upper())
    for name in ("hypercorn.error", "hypercorn.access"):
        hypercorn = logging.getLogger(name)
        hypercorn.handlers = []
        hypercorn.propagate = True
        hypercorn.setLevel(logging.NOTSET)
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught
    _listener = _BatchWriter(records, sink)
    _listener.start()
    atexit.register(stop)


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
