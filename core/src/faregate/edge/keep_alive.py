"""An answer given before the request's body arrived (a 404 for an unknown path, a 401
before the body is read) must not leave the client a connection that dies under its next
request. Hypercorn closes an HTTP/1.1 connection whose request body it has not read to the
end when the answer finishes, without saying so; a keep-alive client (httpx, the SDKs)
then sends its next request into the closed socket and gets "Server disconnected".

So: a small body still on its way is awaited briefly (the connection stays reusable); a
large, chunked or slow one gets ``Connection: close`` (the client opens a new one)."""

from __future__ import annotations

import asyncio

from quart import Quart, Response, request

# a body this small arrives in the same instant as its headers unless the client stalls
_AWAIT_BODY_BYTES = 64 * 1024
_AWAIT_BODY_SECONDS = 0.25


def install(app: Quart) -> None:
    @app.after_request
    async def _close_if_body_unread(response: Response) -> Response:
        arrived = request.body._complete  # Quart sets it when the ASGI body's last part came
        if arrived.is_set():
            return response
        length = request.content_length
        if length is None and "transfer-encoding" not in request.headers:
            return response  # no body at all
        if length is not None and length <= _AWAIT_BODY_BYTES:
            try:
                await asyncio.wait_for(arrived.wait(), _AWAIT_BODY_SECONDS)
                return response
            except TimeoutError:
                pass
        response.headers["Connection"] = "close"
        return response
