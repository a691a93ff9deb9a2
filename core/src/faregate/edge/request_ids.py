"""Every answer carries a request id (``X-Request-Id``, and new-api's
``X-Oneapi-Request-Id``): relay answers get the exchange's; the rest (management API,
health) get the trusted proxy's or a new one here, which their log lines carry too."""

from __future__ import annotations

from quart import Quart, Response, request

from faregate.exchange.exchange import REQUEST_ID_HEADER, new_request_id, trusted_request_id
from faregate.observe.logs import request_id_var


def install(app: Quart) -> None:
    @app.before_request
    async def _assign_request_id() -> None:
        endpoint = request.endpoint or ""
        if not endpoint.startswith("exchange:"):  # the exchange assigns its own
            request_id_var.set(trusted_request_id(request.headers.get("x-request-id")) or new_request_id())

    @app.after_request
    async def _answer_request_id(response: Response) -> Response:
        if "X-Request-Id" not in response.headers:
            request_id = request_id_var.get() or new_request_id()
            response.headers["X-Request-Id"] = request_id
            response.headers[REQUEST_ID_HEADER] = request_id
        return response
