"""An answer given before the request's body arrived (a 404 for an unknown path, a 401
before the body is read) must not leave the client a connection that dies under its next
request. Hypercorn closes an HTTP/1.1 connection whose request body it has not read to the
end when the answer finishes, without saying so; a keep-alive client (httpx, the SDKs)
then sends its next request into the closed socket and gets "Server disconnected".

So: a small body still on its way is awaited briefly (the connection stays reusable); a
large, chunked or slow one gets ``Connection: close`` (the client opens a new one)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from quart import Response
from quart.wrappers import Request

# a body this small arrives in the same instant as its headers unless the client stalls
AWAIT_BODY_BYTES = 64 * 1024
AWAIT_BODY_SECONDS = 0.25


def body_unread(request: Request) -> bool:
    """Whether the body's last part has not come yet (most bodies are in before the view runs)."""
    return not request.body._complete.is_set()  # Quart sets it when the ASGI body's last part came


async def await_or_close(request: Request, response: Response) -> None:
    """After the view, for a request whose body is unread (:mod:`faregate.edge.steps`)."""
    arrived = request.body._complete

    async def arrival() -> bool:
        await arrived.wait()
        return True

    if await must_close(request.content_length, "transfer-encoding" in request.headers, arrival):
        response.headers["Connection"] = "close"


async def must_close(length: int | None, chunked: bool, arrival: Callable[[], Awaitable[bool]]) -> bool:
    """Whether the connection must close after an answer given before the body's end: not
    without a body; not when a small declared one comes within :data:`AWAIT_BODY_SECONDS`
    (``arrival()`` waits for it, True when it came whole); else yes."""
    if length is None and not chunked:
        return False  # no body at all
    if length is not None and length <= AWAIT_BODY_BYTES:
        try:
            if await asyncio.wait_for(arrival(), AWAIT_BODY_SECONDS):
                return False
        except TimeoutError:
            pass
    return True
