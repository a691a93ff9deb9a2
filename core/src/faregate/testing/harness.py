"""Run a real gateway for tests: in this event loop (``GatewayServer``) or as a
``faregate serve`` subprocess (``GatewayProcess``), on a free loopback port, plus an
admin client that speaks the management API as a new-api user would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from typing import Any

import httpx

ROOT_PASSWORD = "faregate-test-pw"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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
                         **(settings or {})}
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._shutdown = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self.app: Any = None

    @property
    def gateway(self) -> Any:
        return self.app.faregate

    async def start(self) -> None:
        from hypercorn.asyncio import serve
        from hypercorn.config import Config

        from faregate.app import create_app
        from faregate.plugins import load_plugins

        plugins = self.plugins if self.plugins is not None else load_plugins()
        self.app = create_app(plugins, self.settings)
        config = Config()
        config.bind = [f"127.0.0.1:{self.port}"]
        config.accesslog = None
        config.graceful_timeout = 5
        self._task = asyncio.create_task(serve(self.app, config, shutdown_trigger=self._shutdown.wait))
        async with httpx.AsyncClient() as client:
            for _ in range(200):
                if self._task.done():
                    self._task.result()
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(self.base_url + "/api/status")).status_code == 200:
                        return
                await asyncio.sleep(0.05)
        raise RuntimeError("gateway did not start")

    async def stop(self) -> None:
        self._shutdown.set()
        if self._task is not None:
            await asyncio.wait_for(self._task, 30)


class GatewayProcess:
    """``faregate serve`` in a subprocess, configured through the environment."""

    def __init__(self, data_dir: str, *, workers: int = 1, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "FAREGATE_DATA_DIR": data_dir, "FAREGATE_FLUSH_INTERVAL": "0.01",
                    **(env or {})}
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = os.path.join(data_dir, "gateway.log")

    def start(self) -> None:
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "faregate.cli", "serve", "--port", str(self.port), "--workers",
             str(self.workers)], env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
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
