"""``GET /v1/models`` and ``GET /v1/models/{model}``: the models the caller's key may
use, in the format the request's headers speak (OpenAI by default)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from quart import Response, request

from faregate import jsonutil
from faregate.contracts import InboundFormat, ModelInfo
from faregate.errors import GatewayError
from faregate.relay.pipeline import new_request_id

if TYPE_CHECKING:
    from faregate.gateway import Gateway
    from faregate.relay.pipeline import Relay

DEFAULT_FORMAT = "openai.chat"


def pick_format(gateway: Gateway) -> InboundFormat:
    for fmt in gateway.formats.values():
        if fmt.claims_model_list(request.headers, request.args):
            return fmt
    return gateway.formats.get(DEFAULT_FORMAT) or next(iter(gateway.formats.values()))


def model_list_handlers(gateway: Gateway, relay: Relay) -> tuple[Callable[..., Any], Callable[..., Any]]:
    async def visible_models(fmt: InboundFormat) -> list[ModelInfo]:
        principal = await relay.authenticate_request(fmt)
        names = gateway.snapshot.models_for_group(principal.group)
        token = principal.token
        if token is not None and token.model_limits is not None:
            names = [n for n in names if n in token.model_limits]
        created = gateway.started_at
        return [ModelInfo(id=n, created=created) for n in names]

    async def list_models() -> Response:
        fmt = pick_format(gateway)
        rid = new_request_id()
        try:
            models = await visible_models(fmt)
        except GatewayError as err:
            status, body = fmt.render_error(err, rid)
            return Response(body, status=status, content_type="application/json")
        return Response(jsonutil.dumps(fmt.render_model_list(models)), content_type="application/json")

    async def get_model(model: str) -> Response:
        fmt = pick_format(gateway)
        rid = new_request_id()
        try:
            models = await visible_models(fmt)
            found = next((info for info in models if info.id == model), None)
            if found is None:
                raise GatewayError(404, f"The model '{model}' does not exist", type="invalid_request_error",
                                   code="model_not_found", param="model")
        except GatewayError as err:
            status, body = fmt.render_error(err, rid)
            return Response(body, status=status, content_type="application/json")
        return Response(jsonutil.dumps(fmt.render_model(found)), content_type="application/json")

    return list_models, get_model
