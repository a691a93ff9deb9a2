"""Quart's ASGI HTTP connection, minus the generic work it does per request that the
gateway never needs: it runs the request's handler in a task of its own beside the body
receiver and waits for the first of the two (two tasks and an ``asyncio.wait`` per
request), and builds the request's headers one validated ``Headers.add`` at a time.

Here the handler runs in the task the server started for the request; the receiver task
feeds the body as before and, when the client goes away, cancels the handler as Quart
would (the exchange sees the same ``CancelledError``). The headers are made in one list:
the HTTP server has validated them already (h11 refuses a line break in a value, which is
what werkzeug's ``add`` checks), as :class:`RequestHeaders`, whose lookups of an absent name
raise nothing. Body limits, timeouts and streaming are Quart's, unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from quart.asgi import ASGIHTTPConnection, _normalise_path
from werkzeug.datastructures import Headers

if TYPE_CHECKING:
    from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable
    from quart.wrappers import Request

#: header names seen before, in werkzeug's title case (a request carries a dozen, the same
#: ones request after request); bounded, as clients choose the names
_TITLED: dict[bytes, str] = {}
_MAX_TITLED = 512


def _title(name: bytes) -> str:
    titled = _TITLED.get(name)
    if titled is None:
        titled = name.decode("latin1").title()
        if len(_TITLED) < _MAX_TITLED:
            _TITLED[name] = titled
    return titled


class RequestHeaders(Headers):
    """werkzeug's request headers, whose ``get`` and ``in`` of an absent name (most of the
    lookups the gateway makes: an SDK's optional header, a proxy's, a cookie) scan the list
    and return, where werkzeug raises and catches a ``BadRequestKeyError`` (an HTTP exception
    built, with its response fields, per miss). ``headers[name]`` of an absent name still raises it."""

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return super().__contains__(key)  # type: ignore[operator]
        wanted = key.lower()
        return any(name.lower() == wanted for name, _ in self._list)

    def get(self, key: Any, default: Any = None, type: Any = None) -> Any:  # type: ignore[override]  # noqa: A002 - werkzeug's overloads, one body
        if type is not None or not isinstance(key, str):
            return super().get(key, default, type)
        wanted = key.lower()
        for name, value in self._list:
            if name.lower() == wanted:
                return value
        return default


def client_address(scope: Any) -> str:
    """The client's address as Quart's ``request.remote_addr`` gives it."""
    return (scope.get("client") or ["<local>"])[0]  # type: ignore[no-any-return]


def request_headers(scope: Any) -> RequestHeaders:
    """The ASGI scope's headers as Quart's request has them (``Remote-Addr`` first, the names
    in werkzeug's title case), made in one list: what ``Headers.add`` would build, without a
    validation call per header (h11 has refused a line break in a value already)."""
    pairs = [("Remote-Addr", client_address(scope))]
    pairs += [(_title(name), value.decode("latin1")) for name, value in scope["headers"]]
    headers = RequestHeaders()
    headers._list = pairs
    return headers


class Handling:
    """A request's handler (the task the server started for it) and the receiver task beside
    it, as Quart runs them: the receiver feeds the body and, when the client goes away before
    the answer is done, cancels the handler (:meth:`gone`); the handler's answer then ends
    quietly, a cancel from anyone else (the server's, at shutdown) passes on."""

    __slots__ = ("task", "client_gone", "answered")

    def __init__(self) -> None:
        task = asyncio.current_task()
        assert task is not None  # an ASGI app runs in a task
        self.task = task
        self.client_gone = self.answered = False

    def gone(self) -> None:
        """The client went away: the answer, unless done, is cancelled (as Quart cancels its handler)."""
        if not self.answered:
            self.client_gone = True
            self.task.cancel()

    async def run(self, answer: Awaitable[None], receiving: Coroutine[Any, Any, None]) -> None:
        """Await ``answer`` with ``receiving`` (which calls :meth:`gone` at the disconnect) in a task beside it."""
        receiver = asyncio.ensure_future(receiving)
        try:
            await answer
        except asyncio.CancelledError:
            if not self.client_gone or self.task.uncancel():
                raise  # not (only) our own cancel: the server's, at shutdown
        finally:
            self.answered = True  # no await since the answer: no cancel can be on its way
            if not receiver.done():
                receiver.cancel()
        if receiver.done() and not receiver.cancelled() and (error := receiver.exception()) is not None:
            raise error


class EdgeHTTPConnection(ASGIHTTPConnection):
    async def __call__(self, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        request = self._create_request_from_scope(send)
        handling = Handling()
        await handling.run(self.handle_request(request, send), self._receive(request, receive, handling))

    async def _receive(self, request: Request, receive: ASGIReceiveCallable, handling: Handling) -> None:
        await self.handle_messages(request, receive)  # returns at the client's disconnect
        handling.gone()

    def _create_request_from_scope(self, send: ASGISendCallable) -> Request:
        scope = self.scope
        headers = request_headers(scope)
        if scope["http_version"] < "1.1":
            headers.setdefault("Host", self.app.config["SERVER_NAME"] or "")
        path = scope["path"]
        path = path if path[0] == "/" else urlparse(path).path
        root_path = scope.get("root_path", "")
        if root_path != "":
            path = _normalise_path(path, root_path)
        config = self.app.config
        return self.app.request_class(
            scope["method"],
            scope["scheme"],
            path,
            scope["query_string"],
            headers,
            root_path,
            scope["http_version"],
            max_content_length=config["MAX_CONTENT_LENGTH"],
            body_timeout=config["BODY_TIMEOUT"],
            send_push_promise=partial(self._send_push_promise, send),
            scope=scope,
        )
