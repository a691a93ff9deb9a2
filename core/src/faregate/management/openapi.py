"""The management API describes itself: request and response bodies are declared pydantic
models (quart-schema), checked on the way in (a 400 in the envelope naming each bad field)
and turned into an OpenAPI 3.1 document at ``/api/openapi.json``, rendered at ``/api/docs``
(:mod:`faregate.management.api_docs`: Swagger UI served by the gateway itself).

Why quart-schema with pydantic v2: it is Quart's own schema extension (the decorators sit on
the routes, so the document cannot drift from them), pydantic v2 is already a dependency
of the ecosystem we use and gives field-level error messages; msgspec would be faster, but
only the management API (not the relay) validates through it, so speed does not decide.

Every operation's answers are in the document: ``200`` is the route's declared envelope
(``@document_response(Ok[...])``) or any failure, and ``default`` (any other status) is a
failure. A route declaring nothing is documented as the bare envelope."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator
from quart import Quart, Request, Response
from quart_schema import QuartSchema, RequestSchemaValidationError
from quart_schema.openapi import OpenAPIProvider
from werkzeug.routing import Rule

from faregate import __version__, jsonutil
from faregate.awaitables import await_me_maybe
from faregate.management import api_docs
from faregate.management.api_docs import DOCS_PATH
from faregate.management.common import ACCESS

OPENAPI_PATH = "/api/openapi.json"
#: where a view's non-JSON answers are declared (see :func:`document_stream`)
STREAM_ATTRIBUTE = "faregate_stream_media"


class Body(BaseModel):
    """A request body: unknown fields are refused (a typo is an error, not a silent no-op)
    and types are strict (a string where a number belongs is an error, as in new-api's Go
    binding). No text may hold NUL: PostgreSQL cannot store it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value


#: a row id as the management API takes it (a positive 32-bit integer)
RowId = Annotated[int, Field(ge=1, le=2**31 - 1)]
INT64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]


def _refuse_bool(value: Any) -> Any:
    # a Literal of integers takes True as 1; Go's binding (and strict mode elsewhere) does not
    if isinstance(value, bool):
        raise ValueError("must be an integer, not true or false")
    return value


#: put on a ``Literal`` of integers: ``Annotated[Literal[1, 2], NOT_BOOL]``
NOT_BOOL = BeforeValidator(_refuse_bool)


class IdList(Body):
    """``{ids}``: at most 100 row ids."""

    ids: Annotated[list[RowId], Field(min_length=1, max_length=100)]


# -- answers ---------------------------------------------------------------------------------
T = TypeVar("T")


class Shape(BaseModel):
    """What a route answers inside ``data``: a field it does not declare is drift, so the
    document says ``additionalProperties: false`` and the conformance tests fail on it."""

    model_config = ConfigDict(extra="forbid")


# a route declares its answer as @document_response(Ok[UserView]); the docstrings of these
# envelopes are the document's descriptions of the answer
class Ok(BaseModel, Generic[T]):
    """Success: ``data`` is the answer."""

    model_config = ConfigDict(extra="forbid")
    success: Literal[True]
    message: str
    data: T


class Done(BaseModel):
    """Success, without data."""

    model_config = ConfigDict(extra="forbid")
    success: Literal[True]
    message: str


class Page(Shape, Generic[T]):
    """new-api's page: ``{page, page_size, total, items}``."""

    page: int
    page_size: int
    total: int
    items: list[T]


FAILURE = {"title": "Failure", "type": "object", "required": ["success", "message"],
           "description": "A refusal, with any status: new-api answers most with 200.",
           "properties": {"success": {"const": False, "type": "boolean"}, "message": {"type": "string"}}}
ENVELOPE = {"title": "Envelope", "type": "object", "required": ["success", "message"],
            "description": "The management envelope of a route that declares no data shape.",
            "properties": {"success": {"type": "boolean"}, "message": {"type": "string"}, "data": {}}}
_REF = "#/components/schemas/"


def document_stream(*media_types: str) -> Callable[[T], T]:
    """Declare a route whose success is not JSON (an export: ``text/csv``…); its failures
    are still the JSON envelope."""

    def decorator(view: T) -> T:
        setattr(view, STREAM_ATTRIBUTE, media_types)
        return view

    return decorator


class ManagementOpenAPI(OpenAPIProvider):
    """Only the management API (the relay routes are described by the vendors' own
    documents), with every answer enveloped; two different models under one component
    name would make one route's document silently describe another's, so that fails."""

    _seen: dict[str, Any]

    def generate_rules(self) -> Iterable[Rule]:
        for rule in super().generate_rules():
            if rule.rule.startswith("/api/") and rule.rule != OPENAPI_PATH and not rule.rule.startswith(DOCS_PATH):
                yield rule

    def schema(self) -> dict[str, Any]:
        self._seen = {}
        doc = super().schema()
        doc["components"]["schemas"].update({"Failure": FAILURE, "Envelope": ENVELOPE})
        return doc

    def build_paths(self, rule: Rule) -> tuple[dict[str, Any], dict[str, Any]]:
        paths, components = super().build_paths(rule)
        for name, definition in components.items():
            if self._seen.setdefault(name, definition) != definition:
                raise TypeError(f"two different models are named {name} (one is on {rule.rule})")
        stream = getattr(self._app.view_functions[rule.endpoint], STREAM_ATTRIBUTE, ())
        for operations in paths.values():
            for operation in operations.values():
                operation["responses"] = _enveloped(operation["responses"], stream)
        return paths, components


def _enveloped(responses: dict[Any, Any], stream: tuple[str, ...]) -> dict[str, Any]:
    failure = {"$ref": _REF + "Failure"}
    # a copy: the methods of one rule share the extension's response objects
    out = {str(status): copy.deepcopy(answer) for status, answer in responses.items()}
    ok = out.get("200")
    if ok is None:
        content: dict[str, Any] = {"application/json": {"schema": {"$ref": _REF + "Envelope"}}}
        description = "the envelope"
        if stream:
            content = {"application/json": {"schema": failure}, **{media: {} for media in stream}}
            description = f"the {' or '.join(stream)} stream, or a failure"
        out["200"] = {"description": description, "content": content}
    else:
        media = ok["content"]["application/json"]
        media["schema"] = {"anyOf": [media["schema"], failure]}
    out.setdefault("default", {"description": "a failure", "content": {"application/json": {"schema": failure}}})
    return out


# -- install -----------------------------------------------------------------------------------
class ManagementRequest(Request):
    """Declared bodies under ``/api`` are read as JSON whatever the Content-Type (Gin's
    binding does the same, and ``curl -d`` sends form-urlencoded); an empty body is ``{}``
    (the model then names the missing fields) and a body that is not JSON is a 400 in the
    envelope, not Quart's bare 400 page."""

    @property
    def blueprints(self) -> list[str]:
        # Quart derives them from the endpoint again at each of its three reads per request
        rule = self.url_rule
        known = self.__dict__.get("_blueprints_of")
        if known is not None and known[0] is rule:
            return known[1]  # type: ignore[no-any-return]
        names = super().blueprints
        self.__dict__["_blueprints_of"] = (rule, names)
        return names

    async def get_json(self, force: bool = False, silent: bool = False, cache: bool = True) -> Any:
        if not self.path.startswith("/api/"):
            return await super().get_json(force=force, silent=silent, cache=cache)
        raw = await self.get_data(cache=True)
        if not raw.strip():
            return {}
        try:
            # the standard parser: integers past 64 bits reach the model's bounds (orjson refuses
            # them as bad JSON); NaN and Infinity are not JSON, so they are refused here
            return json.loads(raw, parse_constant=_not_json)
        except (ValueError, RecursionError) as exc:
            if silent:
                return None
            raise RequestSchemaValidationError(ValueError("body: not valid JSON")) from exc


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def install(app: Quart) -> None:
    # the extension's app-wide hooks (response conversion, JSON provider, websocket class)
    # serve views that return models; ours return Responses, so they are put back: the relay
    # pays nothing for the management API's schemas
    plain, json_provider, websocket_class = app.make_response, app.json, app.websocket_class
    # its own docs pages would load their scripts from CDNs: /api/docs is ours (api_docs)
    QuartSchema(app, openapi_path=OPENAPI_PATH, swagger_ui_path=None, redoc_ui_path=None,
                scalar_ui_path=None, openapi_provider_class=ManagementOpenAPI,
                info={"title": "Faregate management API", "version": __version__})
    app.make_response = plain  # type: ignore[method-assign]
    app.json, app.websocket_class = json_provider, websocket_class
    app.request_class = ManagementRequest
    for rule in app.url_map.iter_rules():
        if rule.rule == OPENAPI_PATH:  # the document is public, as the routes it lists
            app.view_functions[rule.endpoint] = _public(app.view_functions[rule.endpoint])
    api_docs.install(app)

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
