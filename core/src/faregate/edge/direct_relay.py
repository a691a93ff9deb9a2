"""The relay's HTTP routes served straight from ASGI, without Quart's per-request machinery.

For a relay request Quart builds a request object and two contexts, matches the path
against every rule of the app (~275), runs the edge's before- and after-request steps
(which do nothing for a relay route but set headers), opens and saves an empty session,
and copies the answer into a werkzeug response it then takes apart again for the server:
about a fifth of the gateway's CPU per relay request. Here an ASGI layer in front of Quart
takes the requests whose path and method are an HTTP relay route's, builds the
:class:`~faregate.contracts.inbound.InboundRequest` itself, runs the same driver and sends
the :class:`~faregate.contracts.inbound.Outcome` as Quart would have (same status, headers
and body; ``tests/test_direct_relay.py`` compares the two). Everything else (the management
API, pages, WebSockets, a login-session route, HEAD and OPTIONS, a path Quart would
redirect) goes to Quart as before.

What Quart did for these requests and is done here: the body, fed by a receiver task that
also cancels the view when the client goes away (as :class:`~faregate.edge.connection.EdgeHTTPConnection`);
the route's body cap; a body still on its way after the answer (:mod:`~faregate.edge.keep_alive`);
an HTML answer's baseline policy and the request id headers (:mod:`~faregate.edge.steps`);
an unexpected error's JSON 500 (:mod:`~faregate.edge.errors`).

Quart's app-wide hooks would not run on these requests, so the layer steps aside (Quart
serves every request, as before) when the app has any it does not know: an app-wide
before/after-request or teardown function other than the edge's own, a URL value
preprocessor, a receiver of Quart's request signals. A plugin's app-wide hook that only
serves unmatched paths (the console's pages) says so with :func:`skip_on_relay`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl

from quart import signals
from werkzeug.datastructures import ImmutableMultiDict
from werkzeug.exceptions import HTTPException
from werkzeug.sansio.http import parse_cookie
from werkzeug.sansio.utils import get_content_length

from faregate.contracts.inbound import InboundRequest, LastChunk, Outcome
from faregate.edge import keep_alive, page_policy, request_ids
from faregate.edge.connection import Handling, RequestHeaders, client_address, request_headers
from faregate.edge.errors import error_body
from faregate.edge.routes import NO_COOKIES, NO_QUERY, RelayRoute, model_list_format, too_large
from faregate.exchange.exchange import Exchange
from faregate.exchange.run import run_exchange

if TYPE_CHECKING:
    from hypercorn.typing import ASGIReceiveCallable, ASGISendCallable
    from quart import Quart

    from faregate.exchange.host import ExchangeHost

log = logging.getLogger("faregate")

F = TypeVar("F", bound=Callable[..., Any])

#: the attribute :func:`skip_on_relay` sets
SKIP_ON_RELAY = "faregate_skip_on_relay"
#: relay paths remembered with their route and parameters (a Gemini path names its model:
#: the clients choose them, so the table is bounded; past it a path is matched each time)
MAX_KNOWN_PATHS = 4096
#: the headers the answer's own fields set (Quart's response sets them over the outcome's)
_SET_HERE = frozenset({"content-type", "content-length"})
#: Quart's signals around a request: a receiver expects them on every request
_REQUEST_SIGNALS = ("request_started", "request_finished", "request_tearing_down", "got_request_exception")


def skip_on_relay(func: F) -> F:
    """Mark an app-wide request hook that has nothing to do for a relay route (the console's
    pages, served where no route matched), or whose work there this module does itself
    (the edge's steps): it does not keep the relay's routes on Quart."""
    setattr(func, SKIP_ON_RELAY, True)
    return func


class _Body:
    """A request's body as the ASGI server hands it over, capped at the route's limit."""

    __slots__ = ("limit", "length", "chunked", "_parts", "_size", "ended", "over", "_waiter")

    def __init__(self, limit: int, length: int | None, chunked: bool) -> None:
        self.limit, self.length, self.chunked = limit, length, chunked
        self._parts: list[bytes] = []
        self._size = 0
        self.ended = False  # the last part came
        self.over = False  # more than ``limit`` came: the rest is not kept
        self._waiter: asyncio.Future[None] | None = None

    def arrived(self) -> bool:
        return self.ended

    def add(self, data: bytes, more: bool) -> None:
        if not self.over and data:
            self._size += len(data)
            if self._size > self.limit:
                self.over = True
                self._parts.clear()
            else:
                self._parts.append(data)
        if not more:
            self.ended = True
        if (self.ended or self.over) and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait_end(self) -> bool:
        """Wait for the body's end, or for its passing the cap: True when it came whole."""
        if not (self.ended or self.over):
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        return self.ended and not self.over

    async def read(self) -> bytes:
        """The whole body (``InboundRequest.read_body``); a declared length over the cap is
        refused before a byte is read, a chunked body as soon as it passes the cap."""
        if self.length is not None and self.length > self.limit:
            raise too_large(self.limit)
        await self.wait_end()
        if self.over:
            raise too_large(self.limit)
        parts = self._parts
        return parts[0] if len(parts) == 1 else b"".join(parts)


class DirectRelay:
    """The ASGI layer (see the module's docstring) in front of ``app``'s own ASGI callable."""

    def __init__(self, app: Quart, inner: Any, gateway: ExchangeHost, routes: dict[str, RelayRoute]) -> None:
        self.app, self.inner, self.gateway, self.routes = app, inner, gateway, routes
        # the first path segments of the relay's routes: any other path goes to Quart unmatched
        self.prefixes = frozenset(r.route.path.split("/", 2)[1] for r in routes.values())
        self.known: dict[tuple[str, str], tuple[RelayRoute, dict[str, str]]] = {}
        self._adapter: Any = None
        self._on: bool | None = None  # decided at the first request, when every hook is in

    async def __call__(self, scope: dict[str, Any], receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            found = self.known.get((scope["method"], scope["path"])) or self._match(scope)
            if found is not None:
                await _Exchange(self, scope, *found).run(receive, send)
                return
        await self.inner(scope, receive, send)

    def _match(self, scope: dict[str, Any]) -> tuple[RelayRoute, dict[str, str]] | None:
        method, path = scope["method"], scope["path"]
        if path[:1] != "/" or path.split("/", 2)[1] not in self.prefixes or not self.enabled():
            return None
        if self._adapter is None:
            self._adapter = self.app.url_map.bind("localhost")
        try:
            rule, params = self._adapter.match(path, method, return_rule=True, websocket=False)
        except (HTTPException, LookupError, ValueError):
            return None  # not found, another method, a redirect: Quart answers it
        relay = self.routes.get(rule.endpoint)
        if relay is None or relay.route.method != method:
            return None  # another view's path, or HEAD of a GET route
        found = (relay, dict(params))
        if len(self.known) < MAX_KNOWN_PATHS:
            self.known[(method, path)] = found
        return found

    def enabled(self) -> bool:
        if self._on is None:
            reason = foreign_hook(self.app)
            if reason is not None:
                log.info("relay routes served through Quart: the app has %s", reason)
            self._on = reason is None
        return self._on


def foreign_hook(app: Quart) -> str | None:
    """What would make a relay request served here miss something Quart would run (see the
    module's docstring), None when there is nothing."""
    for kind, table in (("before-request", app.before_request_funcs), ("after-request", app.after_request_funcs)):
        for blueprint, funcs in table.items():
            for func in funcs:
                if blueprint is None and getattr(func, SKIP_ON_RELAY, False):
                    continue
                return f"a {kind} function {func.__qualname__}"
    if any(app.teardown_request_funcs.values()):
        return "a teardown-request function"
    if any(app.url_value_preprocessors.values()):
        return "a URL value preprocessor"
    for name in _REQUEST_SIGNALS:
        if getattr(signals, name).receivers:
            return f"a receiver of Quart's {name} signal"
    return None


class _Exchange:
    """One relay request served by :class:`DirectRelay`."""

    __slots__ = ("relay", "scope", "route", "params", "body", "handling")

    def __init__(self, relay: DirectRelay, scope: dict[str, Any], route: RelayRoute, params: dict[str, str]) -> None:
        self.relay, self.scope, self.route, self.params = relay, scope, route, params

    async def run(self, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        headers = request_headers(self.scope)
        length = get_content_length(headers.get("Content-Length"), headers.get("Transfer-Encoding"))
        self.body = _Body(self.route.limit, length, "Transfer-Encoding" in headers)
        handling = self.handling = Handling()
        if self._take_queued(receive):
            handling.gone()  # gone before the view began: cancelled at its first wait, as Quart's would be
        await handling.run(self._answer(headers, client_address(self.scope), send), self._receive(receive))

    def _take_queued(self, receive: ASGIReceiveCallable) -> bool:
        """Take the body parts the server has queued already (a body sent with the request's
        head is there before the app runs): the exchange then finds its body in hand instead of
        arming a timer and waiting for the receiver task's first turn. True when the client has
        gone already. Only Hypercorn's asyncio queue is read this way; any other ``receive`` is
        left to the receiver."""
        queue = getattr(receive, "__self__", None)
        if type(queue) is not asyncio.Queue:
            return False
        while not self.body.ended and not queue.empty():
            if self._take(queue.get_nowait()):
                return True
        return False

    async def _receive(self, receive: ASGIReceiveCallable) -> None:
        while not self._take(await receive()):
            pass
        self.handling.gone()

    def _take(self, message: Any) -> bool:
        """A message from the server: a part of the body fed, True at the client's disconnect."""
        if message["type"] == "http.request":
            self.body.add(message.get("body", b""), message.get("more_body", False))
        return message["type"] == "http.disconnect"  # type: ignore[no-any-return]

    async def _answer(self, headers: RequestHeaders, address: str, send: ASGISendCallable) -> None:
        scope, relay, body = self.scope, self.route, self.body
        try:
            query = scope["query_string"]
            inbound = InboundRequest(
                method=scope["method"], path=scope["path"], route=relay.route, path_params=self.params,
                query=ImmutableMultiDict(parse_qsl(query.decode(), keep_blank_values=True,
                                                   errors="werkzeug.url_quote")) if query else NO_QUERY,
                headers=headers, client_ip=address, read_body=body.read,  # type: ignore[arg-type]  # werkzeug's Headers: a Mapping's lookups
                cookies=parse_cookie(";".join(headers.getlist("Cookie")), cls=ImmutableMultiDict)
                if "Cookie" in headers else NO_COOKIES,
                body_arrived=body.arrived)
            gateway = self.relay.gateway
            ex = Exchange(gateway, inbound, relay.fmt or model_list_format(gateway, inbound))
            outcome = await run_exchange(relay.driver, ex)
        except Exception:  # what Quart's error handler answered (faregate.edge.errors)
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            outcome = Outcome(status=500, body=error_body("internal error", "new_api_error", "internal_error"))
        out = outcome.headers
        # what the edge's after-request step does (faregate.edge.steps)
        if not body.ended and (body.over or await keep_alive.must_close(body.length, body.chunked, body.wait_end)):
            out["Connection"] = "close"
        page_policy.add_baseline(outcome.content_type, out)
        request_ids.answer(out)
        # lower-case names, as Quart's encode_headers sends them
        head = [(lowered.encode("latin1"), value.encode("latin1")) for name, value in out.items()
                if (lowered := name.lower()) not in _SET_HERE]
        head.append((b"content-type", outcome.content_type.encode("latin1")))
        stream = outcome.stream
        if stream is None:
            head.append((b"content-length", str(len(outcome.body)).encode()))
            await send({"type": "http.response.start", "status": outcome.status, "headers": head})
            await send({"type": "http.response.body", "body": outcome.body, "more_body": False})
            return
        await send({"type": "http.response.start", "status": outcome.status, "headers": head})
        await _send_stream(stream, send)


async def _send_stream(stream: AsyncIterator[bytes], send: ASGISendCallable) -> None:
    ended = False
    try:
        async for chunk in stream:
            if ended:
                raise RuntimeError("a stream yielded bytes after its LastChunk")
            # the last bytes go with the body's end (the stream ends next, its finally settling it)
            ended = type(chunk) is LastChunk
            await send({"type": "http.response.body", "body": chunk, "more_body": not ended})
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:  # as Quart's body wrapper: the stream's own finally settles it
            await aclose()
    if not ended:
        await send({"type": "http.response.body", "body": b"", "more_body": False})
