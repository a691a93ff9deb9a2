"""A fake echo upstream for tests: a tiny HTTP/1.1 server on a loopback port.

It speaks the echo protocol (see :mod:`faregate_adapter_echo.provider`): it answers
with the prompt's words, at most ``max_tokens`` of them, and counts one token per
word. Usage::

    async with FakeEcho(key="echo-key") as echo:
        ...  # add a channel of type 9001 with base_url=echo.base_url, key="echo-key"
        echo.fail_next(429, "echo is tired")  # the next request gets this error
        echo.requests[-1]["json"]  # what the gateway sent

Plain ``asyncio`` streams keep it free of web-framework dependencies; every response
closes its connection, which keeps the HTTP handling to a few lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any, Self

__all__ = ["FakeEcho", "echo_reply"]

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable"}


def echo_reply(prompt: str, max_tokens: int | None) -> tuple[list[str], int, str]:
    """The echo rule: (output words, tokens_in, done_reason)."""
    words = prompt.split()
    if max_tokens is not None and len(words) > max_tokens:
        return words[:max_tokens], len(words), "length"
    return words, len(words), "stop"


class FakeEcho:
    def __init__(self, *, key: str | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        self.key = key  # when set, requests must carry ``X-Echo-Key: <key>``
        self.host = host
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self.failures: list[tuple[int, str]] = []
        self._server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def fail_next(self, status: int, problem: str) -> None:
        """Answer the next request with ``status`` and ``{"problem": problem}``."""
        self.failures.append((status, problem))

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- one request per connection ------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, path, headers, body = await self._read_request(reader)
            await self._answer(writer, method, path, headers, body)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass  # a client that went away or sent garbage: just close
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
        method, path, _version = (await reader.readline()).decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        return method, path, headers, body

    async def _answer(self, writer: asyncio.StreamWriter, method: str, path: str, headers: dict[str, str],
                      body: bytes) -> None:
        try:
            request = json.loads(body) if body else None
        except json.JSONDecodeError:
            request = None
        self.requests.append({"method": method, "path": path, "headers": headers, "json": request})
        if method != "POST" or path != "/echo":
            return self._send(writer, 404, {"problem": f"no route {method} {path}"})
        if self.key is not None and headers.get("x-echo-key") != self.key:
            return self._send(writer, 401, {"problem": "wrong or missing X-Echo-Key"})
        if self.failures:
            status, problem = self.failures.pop(0)
            return self._send(writer, status, {"problem": problem})
        if (not isinstance(request, dict) or not isinstance(request.get("model"), str)
                or not isinstance(request.get("prompt"), str) or not isinstance(request.get("stream"), bool)):
            return self._send(writer, 400, {"problem": "expected {model, prompt, max_tokens, stream}"})
        words, tokens_in, done_reason = echo_reply(request["prompt"], request.get("max_tokens"))
        if not request["stream"]:
            return self._send(writer, 200, {"text": " ".join(words), "tokens_in": tokens_in,
                                            "tokens_out": len(words), "done_reason": done_reason})
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        events = [{"delta": word if i == 0 else " " + word} for i, word in enumerate(words)]
        events.append({"done_reason": done_reason, "tokens_in": tokens_in, "tokens_out": len(words)})
        for event in events:
            data = b"data: " + json.dumps(event).encode() + b"\n\n"
            writer.write(b"%x\r\n%s\r\n" % (len(data), data))  # one HTTP chunk per event
            await writer.drain()
            await asyncio.sleep(0)  # let the gateway see events one by one
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n")
        writer.write(head.encode() + data)
