"""Forward proxies for tests of a channel's ``setting.proxy``: :class:`HttpProxy` (plain
http in absolute form, recording each request line and its ``Proxy-Authorization``) and
:class:`Socks5Proxy` (SOCKS5 without authentication, recording each ``CONNECT``). Each
serves on a loopback port of its own while its ``async with`` lasts."""

from __future__ import annotations

import asyncio
import contextlib
import struct

import httpx

__all__ = ["HttpProxy", "Socks5Proxy"]


class HttpProxy:
    """A forward proxy for plain http (absolute-form requests), recording what it was asked."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []  # (request line, Proxy-Authorization)
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            line, *fields = head.split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields if f)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.seen.append((line, headers.get("proxy-authorization", "")))
            method, url, _ = line.split(" ")
            forwarded = {k: v for k, v in headers.items() if not k.startswith("proxy-")
                         and k not in ("host", "content-length", "connection")}
            async with httpx.AsyncClient() as http:
                resp = await http.request(method, url, headers=forwarded, content=body)
            writer.write(b"HTTP/1.1 %d OK\r\ncontent-type: %b\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%b" % (
                resp.status_code, resp.headers.get("content-type", "application/json").encode(), len(resp.content),
                resp.content))
            await writer.drain()
        writer.close()

    async def __aenter__(self) -> HttpProxy:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])


class Socks5Proxy(HttpProxy):
    """A SOCKS5 server without authentication: CONNECT, then bytes both ways."""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            _, n = await reader.readexactly(2)
            await reader.readexactly(n)
            writer.write(b"\x05\x00")
            _, cmd, _, kind = await reader.readexactly(4)
            if kind == 1:
                host = ".".join(str(b) for b in await reader.readexactly(4))
            else:
                host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
            (port,) = struct.unpack("!H", await reader.readexactly(2))
            self.seen.append((f"CONNECT {host}:{port}", ""))
            up_reader, up_writer = await asyncio.open_connection(host, port)
            writer.write(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
                dst.close()

            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        writer.close()
