"""The request line's log record (faregate.observe.request_log.make_record) is the record
``log.makeRecord`` makes: every field equal, the time fields as LogRecord computes them; a
record factory of someone else's is used; a forked child carries its own process id."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator

import pytest

from faregate.observe import request_log
from faregate.observe.request_log import log, make_record


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    request_log._SHARED.clear()
    yield
    request_log._SHARED.clear()


@pytest.mark.parametrize("switches", [(False, True, False), (True, True, True), (False, False, False)])
def test_the_record_is_the_one_make_record_makes(monkeypatch: pytest.MonkeyPatch,
                                                 switches: tuple[bool, bool, bool]) -> None:
    monkeypatch.setattr(logging, "logThreads", switches[0])
    monkeypatch.setattr(logging, "logProcesses", switches[1])
    monkeypatch.setattr(logging, "logMultiprocessing", switches[2])
    monkeypatch.setattr("time.time", lambda: 1_800_000_000.987654)
    for level in (logging.INFO, logging.WARNING, logging.INFO):  # the second and third from the shared fields
        ours = make_record(level, "request r1 /v1/chat/completions")
        theirs = log.makeRecord(log.name, level, "(unknown file)", 0, "request r1 /v1/chat/completions", (), None,
                                "(unknown function)")
        assert type(ours) is logging.LogRecord and ours.__dict__ == theirs.__dict__
        assert ours.getMessage() == "request r1 /v1/chat/completions"


def test_the_thread_is_the_settling_one_when_threads_are_logged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging, "logThreads", True)
    make_record(logging.INFO, "first")
    made: list[logging.LogRecord] = []
    worker = threading.Thread(target=lambda: made.append(make_record(logging.INFO, "x")), name="settler")
    worker.start()
    worker.join()
    assert made[0].threadName == "settler" and made[0].thread == worker.ident


def test_a_record_factory_of_someone_elses_is_used() -> None:
    class Traced(logging.LogRecord):
        pass

    old = logging.getLogRecordFactory()
    logging.setLogRecordFactory(Traced)
    try:
        assert type(make_record(logging.INFO, "x")) is Traced
    finally:
        logging.setLogRecordFactory(old)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_logs_its_own_process_id() -> None:
    assert make_record(logging.INFO, "parent").process == os.getpid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, str(make_record(logging.INFO, "child").process == os.getpid()).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 10) == b"True"
