"""The edge's work around every view, as one before-request and one after-request hook
(Quart awaits each hook through its own coroutine and lookups, and each hook read the
request through the context proxy again): in order,

before the view: the global rate limits (:mod:`~faregate.edge.global_limits`, when on),
the management API's body cap (:func:`~faregate.edge.routes.cap_management_body`), the
request id of a non-relay request (:mod:`~faregate.edge.request_ids`). An answer from the
first two ends the request there, as a refusing before-request hook does.

after the view: a body still on its way awaited briefly or the connection closed
(:mod:`~faregate.edge.keep_alive`), the baseline policy of an HTML page
(:mod:`~faregate.edge.page_policy`), the request id headers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quart import Quart, Response, request

from faregate.edge import global_limits, keep_alive, page_policy, request_ids
from faregate.edge.direct_relay import skip_on_relay
from faregate.edge.routes import body_limit, cap_management_body, is_management

if TYPE_CHECKING:
    from faregate.exchange.host import ExchangeHost


def install(app: Quart, gateway: ExchangeHost) -> None:
    settings = gateway.settings
    limits_on = global_limits.enabled(settings)
    management_limit, body_timeout = body_limit(gateway, None), float(settings.body_timeout)

    @app.before_request
    @skip_on_relay  # faregate.edge.direct_relay does their work for a relay route
    async def _edge_before() -> Response | None:
        current = request._get_current_object()  # type: ignore[attr-defined]  # the proxy resolved once
        if limits_on and (limit := global_limits.which(settings, current)) is not None:
            refused = await global_limits.count(limit, current)
            if refused is not None:
                return refused
        if is_management(current.path):
            refused = await cap_management_body(app, current, management_limit, body_timeout)
            if refused is not None:
                return refused
        request_ids.assign(current)
        return None

    @app.after_request
    @skip_on_relay
    async def _edge_after(response: Response) -> Response:
        current = request._get_current_object()  # type: ignore[attr-defined]
        if keep_alive.body_unread(current):
            await keep_alive.await_or_close(current, response)
        page_policy.apply_baseline(response)
        request_ids.answer(response.headers)
        return response
