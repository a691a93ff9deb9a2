"""WebSocket upgrades for fake vendor servers (a realtime API, say), on the connection a
:class:`~faregate.testing.fake_server.FakeServer` parsed the upgrade request from.

The fake checks the request (a vendor's own 401 or 404 is a plain answer before this),
then::

    ws = await upgrade(request, response)       # 101 Switching Protocols
    async for message in ws:                    # str or bytes, until the client closes
        await ws.send(json.dumps({...}))
    await ws.close()                            # or ws.drop(): the TCP connection dies

Frames are read and written with ``wsproto`` (a dependency of Hypercorn): fragmented
messages are joined, pings answered, a message over ``max_message`` bytes closes the
connection with 1009 as a real server would. No extension (compression) is negotiated.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator

from wsproto.connection import Connection, ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage
from wsproto.utilities import ACCEPT_GUID, RemoteProtocolError

from faregate.testing.fake_server import Request, Response

__all__ = ["FakeWebSocket", "NotAnUpgrade", "is_upgrade", "upgrade"]

#: a fake's default bound on one message (OpenAI takes up to 15 MiB of audio per event)
MAX_MESSAGE = 16 * 1024 * 1024


class NotAnUpgrade(Exception):
    """The request asks for no WebSocket (or a version other than 13)."""


def is_upgrade(request: Request) -> bool:
    headers = request.headers
    return (request.method == "GET" and headers.get("upgrade", "").lower() == "websocket"
            and "upgrade" in headers.get("connection", "").lower())


def accept_token(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode() + ACCEPT_GUID).digest()).decode()


async def upgrade(request: Request, response: Response, *, subprotocol: str | None = None,
                  max_message: int = MAX_MESSAGE) -> FakeWebSocket:
    """Answer ``request`` with 101 and return the WebSocket; :class:`NotAnUpgrade` when it
    is not a version-13 upgrade with a key (answer it yourself then)."""
    key = request.headers.get("sec-websocket-key", "")
    if not is_upgrade(request) or not key or request.headers.get("sec-websocket-version") != "13":
        raise NotAnUpgrade(request.path)
    assert response.reader is not None, "the FakeServer hands every response its reader"
    head = [b"HTTP/1.1 101 Switching Protocols", b"upgrade: websocket", b"connection: Upgrade",
            b"sec-websocket-accept: " + accept_token(key).encode()]
    if subprotocol is not None:
        head.append(b"sec-websocket-protocol: " + subprotocol.encode())
    if response.request_id is not None:
        head.append(response.request_id.rstrip(b"\r\n"))
    response.keep_alive = False  # the connection is the WebSocket's from now on
    response.write(b"\r\n".join(head) + b"\r\n\r\n")
    await response.drain()
    return FakeWebSocket(response.reader, response, max_message)


class FakeWebSocket:
    """The server end of an upgraded connection."""

    def __init__(self, reader: asyncio.StreamReader, response: Response, max_message: int) -> None:
        self._reader = reader
        self._response = response
        self._conn = Connection(ConnectionType.SERVER)
        self._max = max_message
        self._text: list[str] = []
        self._bytes: list[bytes] = []
        self._size = 0
        self._ready: list[str | bytes] = []
        #: the close code the client sent (None: it has not closed)
        self.close_code: int | None = None
        self.closed = False

    def __aiter__(self) -> AsyncIterator[str | bytes]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[str | bytes]:
        while (message := await self.receive()) is not None:
            yield message

    async def receive(self) -> str | bytes | None:
        """The next whole message; None once the client closed or the connection died."""
        while not self._ready:
            if self.closed:
                return None
            try:
                data = await self._reader.read(65536)
            except (ConnectionError, OSError):
                data = b""
            if not data:
                self.closed = True
                return None
            try:
                self._conn.receive_data(data)
                await self._handle_events()
            except RemoteProtocolError:
                await self.close(1002)
        return self._ready.pop(0)

    async def _handle_events(self) -> None:
        for event in self._conn.events():
            if isinstance(event, TextMessage | BytesMessage):
                self._size += len(event.data)
                if self._size > self._max:
                    await self.close(1009, "message too big")
                    return
                if isinstance(event, TextMessage):
                    self._text.append(event.data)
                else:
                    self._bytes.append(bytes(event.data))
                if event.message_finished:
                    self._ready.append("".join(self._text) if isinstance(event, TextMessage) else b"".join(self._bytes))
                    self._text, self._bytes, self._size = [], [], 0
            elif isinstance(event, Ping):
                self._write(self._conn.send(event.response()))
            elif isinstance(event, CloseConnection):
                self.close_code = event.code
                if self._conn.state is ConnectionState.REMOTE_CLOSING:
                    self._write(self._conn.send(event.response()))
                self._finish()
                return

    async def send(self, data: str | bytes) -> None:
        """One message (text for ``str``); ignored once closed."""
        if self.closed or self._conn.state is not ConnectionState.OPEN:
            return
        event = TextMessage(data=data) if isinstance(data, str) else BytesMessage(data=data)
        self._write(self._conn.send(event))
        try:
            await self._response.drain()
        except (ConnectionError, OSError):
            self._finish()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame and end the connection."""
        if not self.closed and self._conn.state is ConnectionState.OPEN:
            self._write(self._conn.send(CloseConnection(code=code, reason=reason)))
        self._finish()

    def drop(self) -> None:
        """Kill the TCP connection without a close frame (an upstream that dies)."""
        self.closed = True
        self._response.reset()

    def _write(self, data: bytes) -> None:
        if not self._response.writer.is_closing():
            self._response.write(data)

    def _finish(self) -> None:
        self.closed = True
        self._response.close()
