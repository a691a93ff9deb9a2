"""Run a real gateway for tests: in this event loop (``GatewayServer``) or as a
``faregate serve`` subprocess (``GatewayProcess``), on a free loopback port, plus an
admin client that speaks the management API as a new-api user would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

#: how long a gateway process may take to answer: a two-worker start with every plugin takes
#: 40-45 s on a 2-core machine at load 17, so this only bounds a start that hangs
PROCESS_START_DEADLINE = 180.0
ROOT_PASSWORD = "faregate-test-pw"
#: new-api's global per-IP limits are off in test gateways unless a test turns them on: a test
#: makes hundreds of management calls from one address, and over Redis the counters outlive it
UNLIMITED = {"global_api_rate_limit_enable": False, "global_web_rate_limit_enable": False}


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A loopback port free now, for a process that binds it a moment later. Taken below
    the kernel's ephemeral range: a port the kernel handed out (port 0) may meanwhile become
    the source port of some outgoing connection, and then the gateway cannot bind it (a CI
    run lost a whole worker's tests to that)."""
    low = _ephemeral_low()
    if low > 11000:
        for _ in range(200):
            port = random.randrange(10000, low - 1000)
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        bound: int = sock.getsockname()[1]
        return bound


def listening_socket() -> socket.socket:
    """A bound, listening loopback socket on a port the kernel picks, for a server in this
    process (handed to Hypercorn as ``fd://``): no window in which another socket takes it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    return sock


class AdminClient:
    """The management API with a root session (cookie + ``New-Api-User``)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.http = httpx.AsyncClient(base_url=base_url, timeout=30)
        self.user_id: int | None = None

    async def close(self) -> None:
        await self.http.aclose()

    async def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        headers = kwargs.pop("headers", {})
        if self.user_id is not None:
            headers.setdefault("New-Api-User", str(self.user_id))
        resp = await self.http.request(method, path, headers=headers, **kwargs)
        body: dict[str, Any] = resp.json()
        return body

    async def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        body = await self.call(method, path, **kwargs)
        assert body.get("success"), f"{method} {path} failed: {body}"
        return body.get("data")

    async def setup_root(self, username: str = "root", password: str = ROOT_PASSWORD) -> None:
        status = (await self.call("GET", "/api/setup"))["data"]
        if not status["root_init"]:
            await self.ok("POST", "/api/setup", json={"username": username, "password": password,
                                                      "confirmPassword": password})
        data = await self.ok("POST", "/api/user/login", json={"username": username, "password": password})
        self.user_id = data["id"]

    async def set_option(self, key: str, value: Any) -> None:
        from faregate import jsonutil

        if not isinstance(value, str):
            value = jsonutil.dumps_str(value)
        await self.ok("PUT", "/api/option/", json={"key": key, "value": value})

    async def add_channel(self, *, base_url: str, models: str, key: str = "sk-upstream", type: int = 1,
                          name: str = "ch", **fields: Any) -> int:
        channel = {"type": type, "key": key, "name": name, "base_url": base_url, "models": models,
                   "group": "default", **fields}
        channel_id: int = await self.ok("POST", "/api/channel/", json={"mode": "single", "channel": channel})
        return channel_id

    async def add_token(self, *, remain_quota: int = 500_000, unlimited: bool = False, **fields: Any) -> str:
        data = await self.ok("POST", "/api/token/", json={"name": fields.pop("name", "test"),
                                                          "remain_quota": remain_quota,
                                                          "unlimited_quota": unlimited, "expired_time": -1,
                                                          **fields})
        key = await self.ok("POST", f"/api/token/{data['id']}/key")
        return "sk-" + str(key["key"])


class GatewayServer:
    """A gateway served by Hypercorn inside the running event loop, so tests can also
    look at its internals (``self.app.faregate``)."""

    def __init__(self, data_dir: str, *, db_url: str = "", plugins: Any = None,
                 settings: dict[str, Any] | None = None) -> None:
        self.data_dir = data_dir
        self.db_url = db_url
        self.plugins = plugins
        self.settings = {"data_dir": data_dir, "db_url": db_url, "flush_interval": 0.01,
                         **UNLIMITED, **(settings or {})}
        self._socket = listening_socket()
        self.port: int = self._socket.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._shutdown = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self.app: Any = None

    @property
    def gateway(self) -> Any:
        return self.app.faregate

    async def consume_logs(self) -> list[Any]:
        """The consume log rows written so far, oldest first (the billing batch flushed first)."""
        from faregate.db import models as m

        await self.gateway.ledger.flush()
        return list(await m.Log.filter(type=m.LOG_CONSUME).order_by("id"))

    async def start(self) -> None:
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        from faregate.app import create_app
        from faregate.plugins import load_plugins
        from faregate.testing import seeded_sqlite

        plugins = self.plugins if self.plugins is not None else load_plugins()
        self.app = create_app(plugins, self.settings)
        if self.gateway.settings.migrate:
            await seeded_sqlite.seed(self.gateway.db_config)
        config = Config()
        config.bind = [f"fd://{self._socket.detach()}"]  # Hypercorn owns the bound socket from here
        config.accesslog = None
        config.graceful_timeout = 5
        self._task = asyncio.create_task(serve(self.app, config, shutdown_trigger=self._shutdown.wait))
        try:
            async with httpx.AsyncClient() as client:
                for _ in range(200):
                    if self._task.done():
                        self._task.result()
                    with contextlib.suppress(httpx.HTTPError):
                        if (await client.get(self.base_url + "/api/status")).status_code == 200:
                            return
                    await asyncio.sleep(0.05)
            raise RuntimeError("gateway did not start")
        except BaseException:
            await self._close_after_failure()
            raise

    async def _close_after_failure(self) -> None:
        """A gateway that failed after its start-up ran (the database opened, tortoise's one
        global context taken) must still run its shutdown, or every later gateway of this
        test process fails to start."""
        self._shutdown.set()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 30)
        with contextlib.suppress(Exception):
            await self.app.shutdown()

    async def stop(self) -> None:
        self._shutdown.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 30)
            except BaseException:
                with contextlib.suppress(Exception):
                    await self.app.shutdown()
                raise


class GatewayProcess:
    """``faregate serve`` in a subprocess, configured through the environment."""

    def __init__(self, data_dir: str, *, workers: int = 1, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "FAREGATE_DATA_DIR": data_dir, "FAREGATE_FLUSH_INTERVAL": "0.01",
                    **{f"FAREGATE_{name.upper()}": "false" for name in UNLIMITED}, **(env or {})}
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = os.path.join(data_dir, "gateway.log")

    def start(self) -> None:
        from faregate.testing import seeded_sqlite

        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        seeded_sqlite.seed_process(self.env)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "faregate.cli", "serve", "--port", str(self.port), "--workers",
             str(self.workers)], env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + PROCESS_START_DEADLINE
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {self.logs()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base_url + "/api/status", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        logs = self.logs()
        self.stop()  # a process that never answered (a migration stuck, say) must not outlive the test
        raise RuntimeError(f"gateway did not start: {logs}")

    def logs(self) -> str:
        with open(self.log_path, "rb") as fh:
            return fh.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
