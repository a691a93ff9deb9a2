"""new-api's custom OAuth providers (``/api/custom-oauth-provider/…``, root), which Faregate does
not have: its OAuth sign-in (the faregate-auth-oauth plugin) serves GitHub, Discord, Linux DO
and any OIDC provider. new-api's system settings page lists them on every load; a 404 there
was an error toast on that page. The list answers none; adding, changing, deleting one or
reading a provider's discovery document is refused in the envelope, naming the missing
feature and what to use instead."""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import fail, ok, require
from faregate.management.openapi import Ok
from faregate.principals import Principal

blueprint = Blueprint("custom_oauth", __name__)

REFUSED = ("custom OAuth providers are not available: use the faregate-auth-oauth plugin's GitHub, Discord, "
           "Linux DO or OIDC sign-in (an OIDC provider covers most custom ones)")


@blueprint.get("/api/custom-oauth-provider/")
@require(m.ROLE_ROOT)
@document_response(Ok[list[dict[str, Any]]])
async def providers(me: Principal) -> Response:
    """The custom providers: none."""
    return ok([])


@document_response(Ok[None])
async def _refused(me: Principal, **_: Any) -> Response:
    """Refused in the envelope, naming the feature Faregate does not have."""
    return fail(REFUSED)


for _method, _path in (("GET", "/api/custom-oauth-provider/<int:provider_id>"),
                       ("POST", "/api/custom-oauth-provider/"),
                       ("PUT", "/api/custom-oauth-provider/<int:provider_id>"),
                       ("DELETE", "/api/custom-oauth-provider/<int:provider_id>"),
                       ("POST", "/api/custom-oauth-provider/discovery")):
    blueprint.add_url_rule(_path, f"refused_{_method}_{_path}".replace("/", "_").replace("<", "").replace(">", ""),
                           require(m.ROLE_ROOT)(_refused), methods=[_method])
