"""A migrated SQLite database made once per test process and copied for each new test gateway
(in-process, :func:`seed`; a ``faregate serve`` subprocess, :func:`seed_process`).

Applying every migration to an empty SQLite file costs about 0.9 s of CPU (tortoise replays
each migration's model state), more than most tests themselves; copying a file that was
migrated once costs about a millisecond. The gateway still runs its migrations at start, and
finds nothing to do. Only a new, empty SQLite file is seeded: other engines, a file that
holds data and ``:memory:`` are left to the migrations.
"""

from __future__ import annotations

import atexit
import copy
import functools
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from faregate import jsonutil
from faregate.db import storage

#: the template file of each set of apps (the core's and the plugins' tables)
_templates: dict[str, str] = {}


async def seed(config: dict[str, Any]) -> None:
    """Copy the migrated template into the SQLite file ``config`` names when that file is new
    (absent or empty); make the template first if this process has none for its apps."""
    path = storage.sqlite_file_of(config)
    if path is None or path == ":memory:" or _holds_data(path):
        return
    key = jsonutil.dumps_str(config["apps"])
    template = _templates.get(key)
    if template is None:
        template = os.path.join(_template_dir(), f"template-{len(_templates)}.db")
        template_config = copy.deepcopy(config)
        template_config["connections"]["default"]["credentials"]["file_path"] = template
        await storage.migrate(template_config)
        _templates[key] = template
    shutil.copyfile(template, path)  # into the file the gateway made private: its mode stays 0600


#: what makes a ``faregate serve`` use another database than ``<data dir>/faregate.db``, or
#: other plugins (other tables): such a process migrates its database itself
OTHER_SCHEMA_ENV = (
    "FAREGATE_DB_URL",
    "SQL_DSN",
    "SQLITE_PATH",
    "FAREGATE_CONFIG",
    "FAREGATE_PLUGINS",
    "FAREGATE_DISABLED_PLUGINS",
    "FAREGATE_MIGRATE",
)
_process_template: list[str | None] = []  # made at most once: [path], or [None] if that failed
_process_template_lock = threading.Lock()


def seed_process(env: Mapping[str, str]) -> None:
    """Give the ``faregate serve`` that ``env`` configures a copy of a database ``faregate
    migrate`` made once per test process, when it would start on a new SQLite file in its data
    directory with the plugins of this environment: migrating a new file cost each such start
    about 0.75 s of CPU, a third of it. Any other database, plugin set or config file, and a
    data directory that holds a database already, are left to the process's own migrations."""
    data_dir = env["FAREGATE_DATA_DIR"]
    target = os.path.join(data_dir, "faregate.db")
    if (
        any(env.get(name) for name in OTHER_SCHEMA_ENV)
        or env.get("PYTHONPATH") != os.environ.get("PYTHONPATH")
        or os.path.exists(target)
    ):
        return
    with _process_template_lock:
        if not _process_template:
            _process_template.append(_migrated_template(env))
    template = _process_template[0]
    if template is None:
        return
    descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # private, as the gateway makes it
    with os.fdopen(descriptor, "wb") as out, open(template, "rb") as source:
        shutil.copyfileobj(source, out)


def _migrated_template(env: Mapping[str, str]) -> str | None:
    directory = tempfile.mkdtemp(prefix="process-", dir=_template_dir())
    command = [sys.executable, "-m", "faregate.cli", "migrate"]
    done = subprocess.run(command, env={**env, "FAREGATE_DATA_DIR": directory}, capture_output=True, timeout=300)
    path = os.path.join(directory, "faregate.db")
    return path if done.returncode == 0 and os.path.exists(path) else None


def _holds_data(path: str) -> bool:
    return os.path.exists(path) and os.path.getsize(path) > 0


@functools.cache
def _template_dir() -> str:
    path = tempfile.mkdtemp(prefix="faregate-seeded-sqlite-")
    atexit.register(shutil.rmtree, path, True)
    return path
