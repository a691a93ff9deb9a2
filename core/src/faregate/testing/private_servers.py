"""Private MariaDB, PostgreSQL and Redis servers for fault tests: each on its own data
directory and loopback port, so a test can kill it (``crash``: SIGKILL) or stop it cleanly
and start it again on the same data and port, without touching the servers other tests
share. A server whose binaries are missing raises :class:`ServerUnavailable` (the tests'
fixtures turn it into a skip)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from typing import IO

from faregate.testing.harness import free_port

__all__ = ["PrivateMariaDB", "PrivatePostgres", "PrivateRedis", "PrivateServer", "ServerUnavailable"]

#: Debian installs PostgreSQL's server binaries off the PATH
POSTGRES_BIN_DIRS = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")
#: how long a server may take to accept connections (InnoDB's crash recovery included)
START_DEADLINE = 60.0


class ServerUnavailable(RuntimeError):
    """The server's binaries are missing, or it could not be set up here."""


def _binary(name: str, extra_dirs: Sequence[str] = ()) -> str:
    found = shutil.which(name)
    if found:
        return found
    for folder in extra_dirs:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    raise ServerUnavailable(f"{name} is not installed")


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class PrivateServer:
    """A server process on ``port`` over ``root`` (its data directory and log live there)."""

    name = "server"
    #: the signal that shuts the server down cleanly
    stop_signal = signal.SIGTERM

    def __init__(self, root: str) -> None:
        self.root = root
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = os.path.join(root, f"{self.name}.log")
        self._log: IO[bytes] | None = None

    # -- what each server says ---------------------------------------------------------
    def command(self) -> list[str]:
        raise NotImplementedError

    def prepare(self) -> None:
        """Create the data directory (once)."""

    def ready(self) -> bool:
        return _accepts(self.port)

    # -- lifecycle ---------------------------------------------------------------------
    def start(self) -> None:
        os.makedirs(self.root, exist_ok=True)
        if self.proc is None:
            self.prepare()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed when the process ends
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + START_DEADLINE
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerUnavailable(f"{self.name} exited at start: {self.logs()[-2000:]}")
            if self.ready():
                return
            time.sleep(0.05)
        self.crash()
        raise ServerUnavailable(f"{self.name} did not start within {START_DEADLINE:.0f} s: {self.logs()[-2000:]}")

    def crash(self) -> None:
        """SIGKILL: the server dies as in a power cut (no clean shutdown)."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """A clean shutdown (``stop_signal``), then wait for it."""
        self._end(self.stop_signal)

    def freeze(self) -> None:
        """SIGSTOP: the server hangs with its connections open (a stuck host, a long GC pause):
        the kernel still accepts connections, nothing answers on them."""
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGCONT)

    def restart(self, *, crash: bool = True) -> None:
        (self.crash if crash else self.stop)()
        self.start()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def remove(self) -> None:
        """Kill the server and delete its data directory."""
        self.crash()
        shutil.rmtree(self.root, ignore_errors=True)

    def logs(self) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                return fh.read().decode(errors="replace")
        except OSError:
            return ""

    def _end(self, sig: signal.Signals) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # the whole process group (its own session): the server behind runuser, and
            # its children (PostgreSQL's backends) die with it as in a real crash
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)
                os.killpg(self.proc.pid, signal.SIGCONT)  # a frozen server acts on the signal too
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        # the port is closed once the process is gone; wait for the kernel to agree
        for _ in range(100):
            if not _accepts(self.port):
                break
            time.sleep(0.05)


class PrivateMariaDB(PrivateServer):
    """``mariadbd`` with ``root`` and no password on 127.0.0.1:``port``."""

    name = "mariadb"

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.server = _binary("mariadbd", ("/usr/sbin",))
        self.install = _binary("mariadb-install-db")
        self.datadir = os.path.join(root, "data")

    @property
    def url(self) -> str:
        return f"mysql://root@127.0.0.1:{self.port}"

    def prepare(self) -> None:
        if os.path.isdir(os.path.join(self.datadir, "mysql")):
            return
        done = subprocess.run([self.install, "--no-defaults", f"--datadir={self.datadir}", "--user=root",
                               "--auth-root-authentication-method=normal", "--skip-test-db"],
                              capture_output=True, check=False)
        if done.returncode:
            raise ServerUnavailable(f"mariadb-install-db failed: {done.stdout[-2000:]!r} {done.stderr[-2000:]!r}")

    def command(self) -> list[str]:
        return [self.server, "--no-defaults", f"--datadir={self.datadir}", f"--port={self.port}",
                "--bind-address=127.0.0.1", f"--socket={os.path.join(self.root, 'mariadb.sock')}",
                f"--pid-file={os.path.join(self.root, 'mariadb.pid')}", "--user=root", "--skip-log-bin",
                "--innodb-buffer-pool-size=32M", "--max-connections=200"]

    def ready(self) -> bool:
        # the port opens before InnoDB's recovery ends: ready once a query is answered
        import pymysql

        try:
            conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", connect_timeout=1)
        except pymysql.err.OperationalError:
            return False
        conn.close()
        return True

    def create_database(self, name: str) -> str:
        """A database on this server; its URL for ``FAREGATE_DB_URL``."""
        import pymysql

        conn = pymysql.connect(host="127.0.0.1", port=self.port, user="root", autocommit=True)
        try:
            with conn.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        finally:
            conn.close()
        return f"{self.url}/{name}"


class PrivatePostgres(PrivateServer):
    """``postgres`` trusting local connections as ``postgres`` on 127.0.0.1:``port``. Run by
    the ``postgres`` OS user when the tests run as root (the server refuses root)."""

    name = "postgres"
    stop_signal = signal.SIGINT  # a "fast" shutdown: SIGTERM waits for the clients to leave

    def __init__(self, root: str) -> None:
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            self.as_user = [_binary("runuser"), "-u", "postgres", "--"]
            # pytest's temporary directories are root's alone (0700): the postgres user could
            # not reach a data directory below one; this one goes with :meth:`remove`
            root = tempfile.mkdtemp(prefix="faregate-postgres-")
        super().__init__(root)
        self.server = _binary("postgres", POSTGRES_BIN_DIRS)
        self.initdb = _binary("initdb", POSTGRES_BIN_DIRS)
        self.datadir = os.path.join(self.root, "data")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}"

    def prepare(self) -> None:
        if os.path.isfile(os.path.join(self.datadir, "PG_VERSION")):
            return
        if self.as_user:
            shutil.chown(self.root, user="postgres")
        done = subprocess.run([*self.as_user, self.initdb, "-D", self.datadir, "-U", "postgres", "--auth=trust",
                               "-E", "UTF8"], capture_output=True, check=False)
        if done.returncode:
            raise ServerUnavailable(f"initdb failed: {done.stdout[-2000:]!r} {done.stderr[-2000:]!r}")

    def start(self) -> None:
        if self.as_user and os.path.isdir(self.root):
            shutil.chown(self.root, user="postgres")
        super().start()

    def command(self) -> list[str]:
        return [*self.as_user, self.server, "-D", self.datadir, "-p", str(self.port), "-k", self.root,
                "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "fsync=off"]

    def ready(self) -> bool:
        import asyncio

        import asyncpg  # type: ignore[import-untyped]  # no stubs published

        async def probe() -> bool:
            try:
                conn = await asyncpg.connect(host="127.0.0.1", port=self.port, user="postgres",
                                             database="postgres", timeout=1)
            except (OSError, asyncpg.PostgresError):  # refused, or "the database system is starting up"
                return False
            await conn.close()
            return True

        return asyncio.run(probe())

    def create_database(self, name: str) -> str:
        import asyncio

        import asyncpg

        async def create() -> None:
            conn = await asyncpg.connect(host="127.0.0.1", port=self.port, user="postgres", database="postgres")
            try:
                await conn.execute(f'CREATE DATABASE "{name}" ENCODING \'UTF8\' TEMPLATE template0')
            finally:
                await conn.close()

        asyncio.run(create())
        return f"{self.url}/{name}"


class PrivateRedis(PrivateServer):
    """``redis-server`` without persistence on 127.0.0.1:``port``."""

    name = "redis"

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.server = _binary("redis-server")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def command(self) -> list[str]:
        return [self.server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.root]
