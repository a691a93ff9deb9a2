"""The test harness itself: an in-process gateway whose serving fails after its start-up
ran must leave this process able to start the next one (a CI run lost a worker's every later
test to a bind failure that left tortoise's global context taken), and its port is bound
before it is announced."""

from __future__ import annotations

import asyncio
import socket
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
