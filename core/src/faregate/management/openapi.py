"""The management API describes itself: request and response bodies are declared pydantic
models (quart-schema), checked on the way in (a 400 in the envelope naming each bad field)
and turned into an OpenAPI 3.1 document at ``/api/openapi.json``, rendered at ``/api/docs``.

Why quart-schema with pydantic v2: it is Quart's own schema extension (the decorators sit on
the routes, so the document cannot drift from them), pydantic v2 is already a dependency
of the ecosystem we use and gives field-level error messages; msgspec would be faster, but
only the management API (not the relay) validates through it, so speed does not decide."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from quart import Quart, Response
from quart_schema import QuartSchema, RequestSchemaValidationError
from quart_schema.openapi import OpenAPIProvider
from werkzeug.routing import Rule

from faregate import __version__, jsonutil
from faregate.hooks import await_me_maybe
from faregate.management.common import ACCESS

OPENAPI_PATH = "/api/openapi.json"
DOCS_PATH = "/api/docs"


class Body(BaseModel):
    """A request body: unknown fields are refused (a typo is an error, not a silent no-op)
    and types are strict (a string where a number belongs is an error, as in new-api's Go
    binding)."""

    model_config = ConfigDict(extra="forbid", strict=True)


#: a row id as the management API takes it (a positive 32-bit integer)
RowId = Annotated[int, Field(ge=1, le=2**31 - 1)]


class IdList(Body):
    """``{ids}``: at most 100 row ids."""

    ids: Annotated[list[RowId], Field(min_length=1, max_length=100)]


class ManagementOpenAPI(OpenAPIProvider):
    """Only the management API: the relay routes are described by the vendors' own documents."""

    def generate_rules(self) -> Iterable[Rule]:
        for rule in super().generate_rules():
            if rule.rule.startswith("/api/") and rule.rule not in (OPENAPI_PATH, DOCS_PATH):
                yield rule


def install(app: Quart) -> None:
    # the extension's app-wide hooks (response conversion, JSON provider, websocket class)
    # serve views that return models; ours return Responses, so they are put back: the relay
    # pays nothing for the management API's schemas
    plain, json_provider, websocket_class = app.make_response, app.json, app.websocket_class
    QuartSchema(app, openapi_path=OPENAPI_PATH, swagger_ui_path=DOCS_PATH, redoc_ui_path=None,
                scalar_ui_path=None, openapi_provider_class=ManagementOpenAPI,
                info={"title": "Faregate management API", "version": __version__})
    app.make_response = plain  # type: ignore[method-assign]
    app.json, app.websocket_class = json_provider, websocket_class
    for rule in app.url_map.iter_rules():
        if rule.rule in (OPENAPI_PATH, DOCS_PATH):  # the document is public, as the routes it lists
            app.view_functions[rule.endpoint] = _public(app.view_functions[rule.endpoint])

    @app.errorhandler(RequestSchemaValidationError)
    async def _invalid(err: RequestSchemaValidationError) -> Response:
        return Response(jsonutil.dumps({"success": False, "message": describe(err.validation_error)}),
                        status=400, content_type="application/json")


def _public(view: Any) -> Any:
    """The extension's own view (a bound method, which takes no attributes) declared public."""

    async def documented(*args: Any, **kwargs: Any) -> Any:
        return await await_me_maybe(view(*args, **kwargs))

    setattr(documented, ACCESS, "public")
    return documented


def describe(error: Any) -> str:
    """pydantic's errors as one line: ``field: message; other.field: message``."""
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return str(error)
    parts = []
    for item in errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "body"
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return "; ".join(parts)
