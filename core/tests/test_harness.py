"""The test harness itself: an in-process gateway whose serving fails after its start-up
ran must leave this process able to start the next one (a CI run lost a worker's every later
test to a bind failure that left tortoise's global context taken), and its port is bound
before it is announced."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from hypercorn.config import Config

from faregate.testing.harness import GatewayServer, free_port


async def test_a_gateway_that_fails_to_serve_leaves_the_next_one_startable(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
        make_gateway: Callable[..., Awaitable[GatewayServer]]) -> None:
    def no_sockets(self: Config) -> Any:
        raise OSError(98, "Address already in use")

    with monkeypatch.context() as patch:
        patch.setattr(Config, "create_sockets", no_sockets)
        broken = GatewayServer(str(tmp_path / "broken"))
        with pytest.raises(OSError):
            await asyncio.wait_for(broken.start(), 60)
    gateway = await asyncio.wait_for(make_gateway(), 60)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/api/status")).json()["success"] is True


def test_an_in_process_gateway_holds_its_port_from_the_start(tmp_path: Any) -> None:
    server = GatewayServer(str(tmp_path / "held"))
    with socket.socket() as other, pytest.raises(OSError):
        other.bind(("127.0.0.1", server.port))


def test_free_ports_stay_below_the_ephemeral_range() -> None:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
        low = int(fh.read().split()[0])
    assert all(free_port() < low for _ in range(20))


async def test_test_gateways_start_on_a_copy_of_one_migrated_database(
        tmp_path: Any, make_gateway: Callable[..., Awaitable[GatewayServer]]) -> None:
    """Each in-process gateway on a new SQLite file gets a copy of a database migrated once
    per test process (0.9 s of migrations a gateway otherwise): every migration recorded, no
    row of another gateway's, and a file that holds data is never overwritten."""
    from faregate.db import models as m
    from faregate.db import storage
    from faregate.testing import seeded_sqlite

    first = await make_gateway()
    async with httpx.AsyncClient(base_url=first.base_url) as http:
        assert (await http.post("/api/setup", json={"username": "root", "password": "root-password-1",
                                                    "confirmPassword": "root-password-1"})).json()["success"]
    assert await storage.applied_migrations() == storage.shipped_migrations()
    assert await m.User.filter(username="root").exists()
    assert len(seeded_sqlite._templates) >= 1
    await first.stop()

    second = await make_gateway()
    assert await storage.applied_migrations() == storage.shipped_migrations()
    assert not await m.User.filter(username="root").exists()
    await second.stop()

    again = await make_gateway(data_dir=first.data_dir)  # the first one's file, with its root
    assert await m.User.filter(username="root").exists()
    await again.stop()


def test_tests_hash_passwords_with_argon2s_profile_for_tests() -> None:
    from argon2 import extract_parameters, profiles

    from faregate.security import passwords

    assert extract_parameters(passwords.hash_password("pw")) == profiles.CHEAPEST


@pytest.mark.real_password_hashing
def test_the_gateway_hashes_passwords_with_its_own_parameters() -> None:
    """What a gateway stores: argon2id with argon2-cffi's defaults (RFC 9106, low memory)."""
    from argon2 import extract_parameters, profiles

    from faregate.security import passwords

    stored = passwords.hash_password("pw")
    assert stored.startswith("$argon2id$") and extract_parameters(stored) == profiles.RFC_9106_LOW_MEMORY
    assert passwords.verify_password(stored, "pw") and not passwords.needs_rehash(stored)


def test_default_httpx_clients_share_one_ssl_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test process loads certifi's bundle once, not for every client (about 20 ms of CPU each);
    a client with verification of its own, or the environment's CA file, keeps its own context."""
    import certifi

    def context(client: httpx.AsyncClient) -> ssl.SSLContext:
        pool = client._transport._pool  # type: ignore[attr-defined]
        found: ssl.SSLContext = pool._ssl_context
        return found

    first, second = httpx.AsyncClient(), httpx.AsyncClient(base_url="http://127.0.0.1:9")
    assert context(first) is context(second)
    assert context(first).verify_mode == ssl.CERT_REQUIRED and context(first).check_hostname
    assert context(httpx.AsyncClient(verify=False)) is not context(first)
    own = ssl.create_default_context()
    assert context(httpx.AsyncClient(verify=own)) is own
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert context(httpx.AsyncClient()) is not context(first)


def test_a_gateway_process_on_the_default_sqlite_starts_on_a_migrated_copy(tmp_path: Any) -> None:
    """``GatewayProcess`` gives a ``faregate serve`` that would migrate a new SQLite file a copy of
    one migrated once per test process (its own, private); another database is left alone."""
    import sqlite3
    import stat

    from faregate.testing import seeded_sqlite
    from faregate.testing.harness import GatewayProcess

    processes = [GatewayProcess(str(tmp_path / name)) for name in ("a", "b")]
    for process in processes:
        os.makedirs(process.env["FAREGATE_DATA_DIR"])
        seeded_sqlite.seed_process(process.env)
    files = [os.path.join(process.env["FAREGATE_DATA_DIR"], "faregate.db") for process in processes]
    for path in files:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with sqlite3.connect(path) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"tokens", "users", "logs", "quota_leases"} <= tables
    elsewhere = GatewayProcess(str(tmp_path / "c"), env={"FAREGATE_DB_URL": "mysql://root@127.0.0.1/nowhere"})
    os.makedirs(elsewhere.env["FAREGATE_DATA_DIR"])
    seeded_sqlite.seed_process(elsewhere.env)
    assert os.listdir(elsewhere.env["FAREGATE_DATA_DIR"]) == []
