"""A Quart WebSocket as the exchange's :class:`~faregate.contracts.inbound.WebSocketPeer`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quart.wrappers import Websocket


class QuartWebSocketPeer:
    __slots__ = ("_ws", "accepted", "closed")

    def __init__(self, ws: Websocket) -> None:
        self._ws = ws
        self.accepted = False
        self.closed = False

    async def accept(self, subprotocol: str | None = None) -> None:
        await self._ws.accept(subprotocol=subprotocol)
        self.accepted = True

    async def receive(self) -> str | bytes:
        return await self._ws.receive()

    async def send(self, data: str | bytes) -> None:
        if not self.accepted:
            await self.accept()
        await self._ws.send(data)

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if not self.closed:
            self.closed = True
            await self._ws.close(code, reason)
