"""The edge: Quart routes (HTTP and WebSocket) for every route the formats declare (and
the shared model list), each turning the framework's request into an
:class:`~faregate.contracts.inbound.InboundRequest`, running the route's endpoint
driver, and sending the :class:`~faregate.contracts.inbound.Outcome` back. Nothing
else in the exchange knows Quart.

Bodies are capped per route before they are read (see :func:`read_capped`): the
exchange refuses an oversized one in the route's own format, the management API in
its envelope."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from quart import Quart, Response, request, session, websocket
from quart.wrappers import Request
from werkzeug.datastructures import ImmutableMultiDict
from werkzeug.exceptions import RequestEntityTooLarge

from faregate.contracts import WEBSOCKET, InboundFormat, Route
from faregate.contracts.inbound import InboundRequest, Outcome
from faregate.edge.peer import QuartWebSocketPeer
from faregate.errors import GatewayError
from faregate.exchange.exchange import Exchange
from faregate.exchange.policies import EndpointDriver
from faregate.exchange.run import run_exchange
from faregate.management.common import fail

if TYPE_CHECKING:
    from faregate.exchange.host import ExchangeHost

log = logging.getLogger("faregate.edge")

DEFAULT_FORMAT = "openai.chat"
#: routes every gateway serves in the format the request's headers speak
SHARED_ROUTES = (Route("GET", "/v1/models", kind="models"), Route("GET", "/v1/models/{model:path}", kind="model"))

_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")

View = Callable[..., Awaitable[Any]]


def quart_rule(path: str) -> str:
    """``/v1beta/models/{model}:generateContent`` → Werkzeug's ``<model>`` syntax."""
    return _PARAM.sub(lambda m: f"<{m[2]}:{m[1]}>" if m[2] else f"<{m[1]}>", path)


#: endpoint kinds capped by their own setting rather than ``max_body_mb``
KIND_LIMITS = {"count_tokens": "count_tokens_max_body_mb"}
MIB = 1024 * 1024


def body_limit(gateway: ExchangeHost, route: Route | None) -> int:
    """The largest body ``route`` (None: the management API) accepts, in bytes: the
    route's own ``max_body_mb`` when it declares one, else its kind's setting;
    ``max_body_mb`` is also every route's ceiling (it is Quart's ``MAX_CONTENT_LENGTH``)."""
    settings = gateway.settings
    name = "management_max_body_mb" if route is None else KIND_LIMITS.get(route.kind, "max_body_mb")
    limit = float(settings.get(name))
    if route is not None and route.max_body_mb is not None:
        limit = min(limit, route.max_body_mb)
    return int(min(limit, float(settings.max_body_mb)) * MIB)


def lenient_slashes(app: Quart) -> None:
    """Every route answers with and without a trailing slash, by the same view and without
    a redirect: ``/api/log/self/`` is ``/api/log/self``, ``/api/channel`` is ``/api/channel/``.
    new-api's router (gin's RedirectTrailingSlash) redirects instead, 301 for GET and 307
    for the rest; a browser's fetch may not follow a redirected DELETE, and an API client
    gains nothing from the round trip. Set before the first route is added: each route
    takes the map's default (werkzeug's ``strict_slashes``), a plugin's routes too."""
    app.url_map.strict_slashes = False


@dataclass(frozen=True, slots=True)
class RelayRoute:
    """An HTTP relay route as installed: what :mod:`faregate.edge.direct_relay` serves it with."""

    route: Route
    fmt: InboundFormat | None
    driver: EndpointDriver
    #: the route's body cap in bytes (:func:`body_limit`)
    limit: int


def install(app: Quart, gateway: ExchangeHost) -> dict[str, RelayRoute]:
    """Add the routes of every format, then the shared ones (when any format serves); the
    HTTP routes an API key calls, by endpoint name."""
    relay: dict[str, RelayRoute] = {}
    for fmt in gateway.formats.values():
        for route in fmt.routes():
            _add(app, gateway, route, fmt, relay)
    if gateway.formats:
        for route in SHARED_ROUTES:
            _add(app, gateway, route, None, relay)
    return relay


def _add(app: Quart, gateway: ExchangeHost, route: Route, fmt: InboundFormat | None,
         relay: dict[str, RelayRoute]) -> None:
    driver = gateway.drivers.get(route.kind)
    owner = fmt.name if fmt is not None else "shared"
    if driver is None:
        log.warning("route %s %s of %s needs endpoint kind %r, which no installed plugin drives; not served",
                    route.method, route.path, owner, route.kind)
        return
    endpoint = f"exchange:{owner}:{route.method}:{route.path}"
    if route.method == WEBSOCKET:
        app.add_websocket(quart_rule(route.path), endpoint=endpoint,
                          view_func=_websocket_view(gateway, route, fmt, driver))
        return
    limit = body_limit(gateway, route)
    app.add_url_rule(quart_rule(route.path), endpoint=endpoint,
                     view_func=_http_view(gateway, route, fmt, driver, limit), methods=[route.method])
    if not route.login_session:  # a login session's route needs Quart's session
        relay[endpoint] = RelayRoute(route, fmt, driver, limit)


def model_list_format(gateway: ExchangeHost, inbound: InboundRequest) -> InboundFormat:
    for fmt in gateway.formats.values():
        if fmt.claims_model_list(inbound):
            return fmt
    return gateway.formats.get(DEFAULT_FORMAT) or next(iter(gateway.formats.values()))


#: what a request without a Cookie header has (werkzeug would parse the absent header into an empty dict)
NO_COOKIES: Mapping[str, str] = MappingProxyType({})
#: what a request without a query string has (werkzeug would parse the empty string into a new one)
NO_QUERY: Mapping[str, str] = ImmutableMultiDict()


def _http_view(gateway: ExchangeHost, route: Route, fmt: InboundFormat | None, driver: EndpointDriver,
               limit: int) -> View:
    read_body = functools.partial(read_capped, limit)
    login = route.login_session  # only such a route sees the session: the others take API keys alone

    async def view(**params: str) -> Response:
        # werkzeug's Headers has a Mapping's lookups without being a Mapping; the hot path
        # takes no cast() call for it
        current = request._get_current_object()  # type: ignore[attr-defined]  # the context proxy resolved once
        headers = current.headers
        inbound = InboundRequest(method=current.method, path=current.path, route=route, path_params=params,
                                 query=current.args if current.query_string else NO_QUERY,
                                 headers=headers, client_ip=current.remote_addr or "", read_body=read_body,
                                 cookies=current.cookies if "cookie" in headers else NO_COOKIES,
                                 session=session if login else None,
                                 body_arrived=current.body._complete.is_set)  # Quart's, set at the body's end
        ex = Exchange(gateway, inbound, fmt or model_list_format(gateway, inbound))
        # refused before its body was read (a bad key, an oversized body)? edge/keep_alive
        # keeps the connection usable or says it closes
        return to_response(await run_exchange(driver, ex))

    view.__name__ = f"exchange_{route.kind}"
    return view


def too_large(limit: int) -> GatewayError:
    return GatewayError(413, f"request body too large: the limit for this endpoint is {limit} bytes",
                        type="invalid_request_error", code="request_too_large")


async def read_capped(limit: int) -> bytes:
    """The current request's whole body, at most ``limit`` bytes: a declared
    Content-Length over it is refused before a byte is read, a chunked body as soon as
    it passes it (Quart's app-wide ``MAX_CONTENT_LENGTH`` stays the outer bound)."""
    length = request.content_length
    if length is not None and length > limit:
        raise too_large(limit)
    try:
        if length is not None:
            # the server ends the body at Content-Length, so it cannot outgrow the check above;
            # not request.get_data(): on 3.11 its wait_for costs a task per request
            body: bytes = await request.body  # Quart types the awaited body as Any
            return body
        received = bytearray()
        async for chunk in request.body:
            received += chunk
            if len(received) > limit:
                raise too_large(limit)
        return bytes(received)
    except RequestEntityTooLarge:
        raise too_large(limit) from None


#: a management view's own, smaller body cap in bytes (a payment webhook's), set on the view
BODY_CAP_ATTRIBUTE = "faregate_max_body"


def is_management(path: str) -> bool:
    """Whether ``path`` is the management API's (its envelope, its body cap, its global limit)."""
    return path == "/api" or path.startswith("/api/")


async def cap_management_body(app: Quart, request: Request, limit: int, timeout: float) -> Response | None:
    """An ``/api/…`` body (:func:`is_management`): refused over ``limit`` (or the view's own
    smaller :data:`BODY_CAP_ATTRIBUTE`) in the management envelope before a view reads it
    (the views read with ``request.get_data()``); None to go on. Called before the view by
    :mod:`faregate.edge.steps`."""
    cap = limit
    rule = request.url_rule
    if rule is not None:
        own = getattr(app.view_functions.get(rule.endpoint), BODY_CAP_ATTRIBUTE, None)
        if isinstance(own, int):
            cap = min(cap, own)
    length = request.content_length
    if length is not None and length <= cap:
        return None
    try:
        async with asyncio.timeout(timeout):
            body = await read_capped(cap)
    except GatewayError as err:
        return fail(err.message, status=err.status)
    except TimeoutError:
        return fail("timed out reading the request body", status=408)
    # a chunked body was read here to be capped: hand it back for the view's get_data()
    request.body.set_result(body)
    return None


async def _no_body() -> bytes:
    return b""


def _websocket_view(gateway: ExchangeHost, route: Route, fmt: InboundFormat | None, driver: EndpointDriver) -> View:
    login = route.login_session

    async def view(**params: str) -> Response | None:
        peer = QuartWebSocketPeer(websocket)
        inbound = InboundRequest(method=WEBSOCKET, path=websocket.path, route=route, path_params=params,
                                 query=websocket.args, headers=websocket.headers,  # type: ignore[arg-type]
                                 client_ip=websocket.remote_addr or "", read_body=_no_body,
                                 cookies=websocket.cookies, session=session if login else None, websocket=peer,
                                 subprotocols=tuple(websocket.requested_subprotocols))
        ex = Exchange(gateway, inbound, fmt or model_list_format(gateway, inbound))
        outcome = await run_exchange(driver, ex)
        if peer.accepted:
            return None  # the session ran (and ended) on the socket
        return to_response(outcome)  # refused before the upgrade: a plain HTTP answer

    view.__name__ = f"exchange_ws_{route.kind}"
    return view


def to_response(outcome: Outcome) -> Response:
    if outcome.stream is not None:
        response = Response(outcome.stream, status=outcome.status, content_type=outcome.content_type,
                            headers=outcome.headers)
        response.timeout = None  # Quart would cut long streams at RESPONSE_TIMEOUT
        return response
    return Response(outcome.body, status=outcome.status, content_type=outcome.content_type,
                    headers=outcome.headers)
