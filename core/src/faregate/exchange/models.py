"""The ``models`` and ``model`` endpoint kinds: the models the caller's key may use,
in the format of the route (or, on the shared ``GET /v1/models``, the format the
request's headers speak; OpenAI's by default)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faregate.contracts import ModelInfo
from faregate.errors import GatewayError

if TYPE_CHECKING:
    from faregate.contracts.inbound import Outcome
    from faregate.exchange.exchange import Exchange


async def visible_models(ex: Exchange) -> list[ModelInfo]:
    principal = await ex.authenticate()
    gw = ex.gateway
    if principal.auto_groups:  # an ``auto`` key: what any of its groups serves
        names = sorted({n for group in principal.auto_groups for n in gw.snapshot.models_for_group(group)})
    else:
        names = gw.snapshot.models_for_group(principal.group)
    token = principal.token
    if token is not None and token.model_limits is not None:
        names = [n for n in names if n in token.model_limits]
    created = gw.started_at
    return [ModelInfo(id=n, created=created) for n in names]


class ModelListDriver:
    kind = "models"

    async def handle(self, ex: Exchange) -> Outcome:
        models = await visible_models(ex)
        return ex.json(ex.format.render_model_list(models, ex.request))


class ModelDriver:
    """One model, named by the route's ``model`` path parameter."""

    kind = "model"

    async def handle(self, ex: Exchange) -> Outcome:
        model = ex.request.path_params.get("model", "")
        found = next((info for info in await visible_models(ex) if info.id == model), None)
        if found is None:
            raise GatewayError(404, f"The model '{model}' does not exist", type="invalid_request_error",
                               code="model_not_found", param="model")
        return ex.json(ex.format.render_model(found))
