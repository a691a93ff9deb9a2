"""First-run setup, public status, and the plugin report."""

from __future__ import annotations

import time

from quart import Blueprint, Response

from faregate import __version__
from faregate.db import models as m
from faregate.management.common import fail, gateway, json_body, ok, require
from faregate.security.passwords import hash_password

blueprint = Blueprint("system", __name__)

ROOT_INITIAL_QUOTA = 100_000_000  # new-api gives a fresh root $200


@blueprint.get("/api/setup")
async def get_setup() -> Response:
    gw = gateway()
    return ok({
        "status": await m.Setup.exists(),
        "root_init": await m.User.filter(role=m.ROLE_ROOT).exists(),
        "database_type": gw.backend.name,
    })


@blueprint.post("/api/setup")
async def post_setup() -> Response:
    """Create the root user once. There is no default password: the caller sets it."""
    gw = gateway()
    if await m.Setup.exists() or await m.User.filter(role=m.ROLE_ROOT).exists():
        return fail("the system is already initialised")
    body = await json_body()
    if body is None:
        return fail("invalid JSON body")
    username = str(body.get("username") or "root").strip()
    password = body.get("password")
    if not isinstance(password, str) or not 8 <= len(password) <= 64:
        return fail("password must be 8 to 64 characters")
    confirm = body.get("confirmPassword")
    if confirm is not None and confirm != password:
        return fail("the two passwords differ")
    if not 1 <= len(username) <= 20:
        return fail("username must be 1 to 20 characters")
    now = int(time.time())
    user = await m.User.create(username=username, password_hash=hash_password(password), display_name="Root User",
                               role=m.ROLE_ROOT, quota=ROOT_INITIAL_QUOTA, created_at=now)
    await m.Setup.create(version=__version__, initialized_at=now)
    for key in ("SelfUseModeEnabled", "DemoSiteEnabled"):
        if key in body:
            await m.Option.update_or_create(key=key, defaults={"value": "true" if body[key] else "false"})
    await gw.feed.publish("user", user.id)
    await gw.feed.publish("option")
    return ok(message="setup complete")


@blueprint.get("/api/status")
async def status() -> Response:
    gw = gateway()
    options = gw.snapshot.options
    return ok({
        "version": __version__,
        "start_time": gw.started_at,
        "system_name": options.system_name,
        "quota_per_unit": options.quota_per_unit,
        "display_in_currency": options.boolean("DisplayInCurrencyEnabled", True),
        "quota_display_type": options.raw.get("general_setting.quota_display_type", "USD"),
        "setup": await m.Setup.exists(),
        "self_use_mode_enabled": options.self_use_mode,
        "demo_site_enabled": options.boolean("DemoSiteEnabled", False),
        "database_type": gw.backend.name,
        "formats": sorted(gw.formats),
    })


@blueprint.get("/api/plugins")
@require(m.ROLE_ADMIN)
async def plugins(me) -> Response:
    """Every plugin: name, version, the hooks it implements, and load errors."""
    return ok([r.as_dict() for r in gateway().plugins.reports])


SECRET_SUFFIXES = ("Token", "Secret", "Key", "secret", "api_key")


@blueprint.get("/api/option/")
@require(m.ROLE_ROOT)
async def get_options(me) -> Response:
    rows = await m.Option.all()
    return ok([{"key": r.key, "value": r.value} for r in rows if not r.key.endswith(SECRET_SUFFIXES)])


@blueprint.put("/api/option/")
@require(m.ROLE_ROOT)
async def put_option(me) -> Response:
    body = await json_body()
    if not body or not isinstance(body.get("key"), str) or not body["key"]:
        return fail("invalid parameters", status=400)
    value = body.get("value", "")
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif not isinstance(value, str):
        from faregate import jsonutil

        value = jsonutil.dumps_str(value) if isinstance(value, dict | list) else str(value)
    await m.Option.update_or_create(key=body["key"], defaults={"value": value})
    await gateway().feed.publish("option")
    return ok()
