"""First-run setup, the plugin report and the options (``GET /api/status``: faregate.management.status)."""

from __future__ import annotations

import contextlib
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from quart import Blueprint, Response
from quart_schema import document_response, validate_request

from faregate import jsonutil
from faregate.accounts.root import AlreadyInitialised, create_root
from faregate.db import models as m
from faregate.management.common import fail, gateway, guarded, ok, public, require
from faregate.management.openapi import Body, Done, Ok, Shape
from faregate.principals import Principal
from faregate.state.absent_options import missing_feature
from faregate.state.option_specs import OptionError, form_of

blueprint = Blueprint("system", __name__)


class SetupState(Shape):
    status: bool
    root_init: bool
    database_type: str


@blueprint.get("/api/setup")
@public
@document_response(Ok[SetupState])
async def get_setup() -> Response:
    gw = gateway()
    return ok({
        "status": await m.Setup.exists(),
        "root_init": await m.User.filter(role=m.ROLE_ROOT).exists(),
        "database_type": gw.backend.name,
    })


PASSWORD_MIN, PASSWORD_MAX = 8, 64
USERNAME_MAX = 20


def check_password(password: Any) -> str | None:
    """new-api asks for at least 8 characters; the upper bound only guards the hasher."""
    if not isinstance(password, str) or not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        return f"password must be {PASSWORD_MIN} to {PASSWORD_MAX} characters"
    return None


#: a password being set (new-api asks for at least 8 characters; the upper bound guards the hasher)
Password = Annotated[str, Field(min_length=PASSWORD_MIN, max_length=PASSWORD_MAX)]
Username = Annotated[str, StringConstraints(strip_whitespace=True, max_length=USERNAME_MAX)]


class SetupBody(Body):
    """new-api's setup form. ``confirmPassword`` is its web form's: when sent (even as
    null) it must match; the spec's body is username + password only. The password is
    checked after "already initialised": new-api's UI sends only the modes then."""

    username: Username = "root"
    password: Password | None = None
    # new-api's names
    confirmPassword: Annotated[str, Field(max_length=PASSWORD_MAX)] | None = None
    SelfUseModeEnabled: bool | None = None
    DemoSiteEnabled: bool | None = None


@blueprint.post("/api/setup")
@public
@guarded
@validate_request(SetupBody)
@document_response(Done)
async def post_setup(data: SetupBody) -> Response:
    """Create the root user once. There is no default password: the caller sets it."""
    gw = gateway()
    if await m.Setup.exists() or await m.User.filter(role=m.ROLE_ROOT).exists():
        return fail("the system is already initialised")
    username, password = data.username or "root", data.password
    if password is None:
        return fail(f"password must be {PASSWORD_MIN} to {PASSWORD_MAX} characters")
    if "confirmPassword" in data.model_fields_set and data.confirmPassword != password:
        return fail("the two passwords differ")
    modes = {"SelfUseModeEnabled": data.SelfUseModeEnabled, "DemoSiteEnabled": data.DemoSiteEnabled}
    try:
        user = await create_root(username, password, {key: "true" if value else "false"
                                                      for key, value in modes.items() if value is not None})
    except AlreadyInitialised:
        return fail("the system is already initialised")
    await gw.feed.publish("user", user.id)
    await gw.feed.publish("option")
    return ok(message="setup complete")


class PluginReportView(Shape):
    name: str
    version: str | None
    hooks: list[str]
    error: str | None
    builtin: bool


@blueprint.get("/api/plugins")
@require(m.ROLE_ADMIN)
@document_response(Ok[list[PluginReportView]])
async def plugins(me: Principal) -> Response:
    """Every plugin: name, version, the hooks it implements, and load errors."""
    return ok([r.as_dict() for r in gateway().plugins.reports])


class OptionItem(Shape):
    key: str
    value: str


@blueprint.get("/api/option/")
@require(m.ROLE_ROOT)
@document_response(Ok[list[OptionItem]])
async def get_options(me: Principal) -> Response:
    """Every declared option with its value in force: the default when none is stored, or when
    the stored one is refused (written behind the API's back or before a check existed: the
    options in force then use the default too); secrets are never listed."""
    registry = gateway().option_registry
    values = registry.defaults()
    for row in await m.Option.all():
        if row.key in registry:
            with contextlib.suppress(OptionError):
                registry.check(row.key, row.value)
                values[row.key] = row.value
    return ok([{"key": key, "value": value} for key, value in values.items() if not registry.is_secret(key)])


class OptionSchemaItem(Shape):
    """A declared option as a form shows it: ``kind`` says the input (``boolean``, ``integer``,
    ``number``, ``choice``, ``text``, ``lines``: one entry a line, ``json``), ``minimum`` and
    ``maximum`` bound an integer or number, ``choices`` a choice, ``max_length`` a text. A
    ``secret`` option's value is never shown (nor its default): it can only be set."""

    key: str
    kind: Literal["boolean", "integer", "number", "choice", "text", "lines", "json"]
    default: str
    description: str
    secret: bool
    minimum: float | None = None
    maximum: float | None = None
    choices: list[str] | None = None
    max_length: int | None = None


@blueprint.get("/api/option/schema")
@require(m.ROLE_ROOT)
@document_response(Ok[list[OptionSchemaItem]])
async def get_option_schema(me: Principal) -> Response:
    """Every declared option (the core's and the installed plugins'), in declaration order,
    with the type and range its value is checked against on ``PUT /api/option/``; not those of
    features Faregate does not have (new-api's, known but holding only their default: no form)."""
    registry = gateway().option_registry
    items: list[dict[str, Any]] = []
    for key, spec in registry.specs.items():
        if missing_feature(spec) is not None:
            continue
        secret = registry.is_secret(key)
        form = form_of(spec.parse, spec.default)
        item: dict[str, Any] = {"key": key, "kind": form.kind, "default": "" if secret else spec.default,
                                "description": spec.description, "secret": secret}
        if form.minimum is not None:
            item["minimum"] = _number(form.minimum)
        if form.maximum is not None:
            item["maximum"] = _number(form.maximum)
        if form.choices is not None:
            item["choices"] = list(form.choices)
        if form.max_length is not None:
            item["max_length"] = form.max_length
        items.append(item)
    return ok(items)


class OptionUpdate(Body):
    """``{key, value}``; the value may be sent as text or as its JSON type (new-api's UI
    sends numbers and booleans); the option's own type is checked next."""

    key: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    value: str | bool | int | float | dict[str, Any] | list[Any] | None = ""


@blueprint.put("/api/option/")
@require(m.ROLE_ROOT)
@validate_request(OptionUpdate)
@document_response(Done)
async def put_option(data: OptionUpdate, me: Principal) -> Response:
    """One option; its declared type and range are checked before anything is stored."""
    key, value = data.key, data.value
    if value is None:
        value = ""
    elif isinstance(value, bool):
        value = "true" if value else "false"
    elif not isinstance(value, str):
        try:
            value = jsonutil.dumps_str(value) if isinstance(value, dict | list) else str(value)
        except (TypeError, ValueError):  # e.g. an integer past 64 bits inside a list
            return fail(f"{key}: the value cannot be stored as JSON", status=400)
    try:
        gateway().option_registry.check(key, value)
    except OptionError as exc:
        return fail(str(exc), status=400)
    await m.Option.update_or_create(key=key, defaults={"value": value})
    await gateway().feed.publish("option")
    return ok()


@blueprint.post("/api/option/rest_model_ratio")
@require(m.ROLE_ROOT)
@document_response(Done)
async def reset_model_ratio(me: Principal) -> Response:
    """new-api's "reset model ratio" (its path's spelling): ``ModelRatio`` back to the built-in
    table, dropping every entry an admin added, changed or removed."""
    await m.Option.filter(key="ModelRatio").delete()  # the default in force again, on every node
    await gateway().feed.publish("option")
    return ok()


def _number(value: float) -> float | int:
    """500000.0 as 500000, as new-api's JSON shows it."""
    return int(value) if float(value).is_integer() else value
