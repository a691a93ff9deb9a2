"""Every answer carries a request id (``X-Request-Id``, and new-api's
``X-Oneapi-Request-Id``): relay answers get the exchange's; the rest (management API,
health) get the trusted proxy's or a new one here, which their log lines carry too."""

from __future__ import annotations

from collections.abc import MutableMapping

from quart.wrappers import Request
from werkzeug.datastructures import Headers

from faregate.exchange.exchange import REQUEST_ID_HEADER, new_request_id, trusted_request_id
from faregate.observe.logs import request_id_var


def assign(request: Request) -> None:
    """Before the view (:mod:`faregate.edge.steps`): the id a non-relay request's log lines carry."""
    endpoint = request.endpoint or ""
    if not endpoint.startswith("exchange:"):  # the exchange assigns its own
        request_id_var.set(trusted_request_id(request.headers.get("x-request-id")) or new_request_id())


def answer(headers: MutableMapping[str, str] | Headers) -> None:
    """After the view: the id on the answer's ``headers``, unless the exchange put its own there."""
    if "X-Request-Id" not in headers:
        request_id = request_id_var.get() or new_request_id()
        headers["X-Request-Id"] = request_id
        headers[REQUEST_ID_HEADER] = request_id
