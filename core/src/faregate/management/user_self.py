"""What a user does with their own account (new-api's ``/api/user/self…`` routes): usable
groups, available models, profile and password changes, account deletion, invitation code."""

from __future__ import annotations

import secrets
from urllib.parse import urlsplit

from quart import Blueprint, Response, session
from tortoise.exceptions import IntegrityError

from faregate import jsonutil
from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m
from faregate.management.common import BadInput, fail, gateway, get_str, ok, require, require_body
from faregate.management.system import USERNAME_MAX, check_password
from faregate.management.user_admin import delete_user_and_keys
from faregate.management.users import _AFF_ALPHABET, DISPLAY_NAME_MAX, user_view
from faregate.principals import Principal
from faregate.security.passwords import check_login_password, hash_password_async

blueprint = Blueprint("user_self", __name__)


@blueprint.get("/api/user/self/groups")
@require(m.ROLE_USER)
async def self_groups(me: Principal) -> Response:
    """``{group: {ratio, desc}}`` for every group the user may give a key."""
    options = gateway().snapshot.options
    return ok({name: {"ratio": options.group_ratio.get(name, 1.0), "desc": desc}
               for name, desc in options.usable_groups(me.user.group).items()})


@blueprint.get("/api/user/models")
@require(m.ROLE_USER)
async def self_models(me: Principal) -> Response:
    """The models enabled channels serve in any of the user's usable groups."""
    snapshot = gateway().snapshot
    groups = snapshot.options.usable_groups(me.user.group)
    if "auto" in groups:
        groups = {**groups, me.user.group: ""}
    models: set[str] = set()
    for group in groups:
        models.update(snapshot.routes.get(group, {}))
    return ok(sorted(models))


@blueprint.put("/api/user/self")
@require(m.ROLE_USER)
async def update_self(me: Principal) -> Response:
    """``{username?, display_name?, password?, original_password}``: a new password needs
    the current one."""
    body = await require_body()
    row = await m.User.get(id=me.user.id)
    fields: dict[str, object] = {}
    for name, max_len in (("username", USERNAME_MAX), ("display_name", DISPLAY_NAME_MAX)):
        value = get_str(body, name, max_len=max_len, strip=True)
        if value:
            fields[name] = value
    password = body.get("password")
    if password not in (None, ""):
        original = get_str(body, "original_password", max_len=128, default="")
        if not await check_login_password(row.password_hash or None, original):
            return fail("the original password is wrong")
        error = check_password(password)
        if error:
            return fail(error, status=400)
        fields["password_hash"] = await hash_password_async(str(password))
    if fields:
        try:
            await m.User.filter(id=row.id).update(**fields)
        except IntegrityError:
            return fail("the username is already taken")
        await gateway().feed.publish("user", row.id)
    return ok(user_view(await m.User.get(id=row.id)))


@blueprint.delete("/api/user/self")
@require(m.ROLE_USER)
async def delete_self(me: Principal) -> Response:
    if me.user.role == m.ROLE_ROOT:
        return fail("the root user cannot delete itself")
    row = await m.User.get_or_none(id=me.user.id)
    if row is not None:
        await delete_user_and_keys(row)
    session.clear()
    return ok()


@blueprint.get("/api/user/aff")
@require(m.ROLE_USER)
async def invitation_code(me: Principal) -> Response:
    """The user's 4-character invitation code, made on first request."""
    row = await m.User.get(id=me.user.id)
    for _ in range(5):
        if row.aff_code:
            return ok(row.aff_code)
        code = "".join(secrets.choice(_AFF_ALPHABET) for _ in range(4))
        try:
            await m.User.filter(id=row.id, aff_code=None).update(aff_code=code)
        except IntegrityError:
            continue  # taken by someone else: draw again
        row = await m.User.get(id=row.id)
    return fail("could not make an invitation code; try again")


# ---- notification settings ------------------------------------------------------------------
NOTIFY_TYPES = ("email", "webhook", "bark", "gotify")
_URL_FIELDS = ("webhook_url", "bark_url", "gotify_url")
_SECRET_FIELDS = ("webhook_secret", "gotify_token")


def _setting_fields(body: dict[str, object], *, admin: bool) -> dict[str, object]:
    """new-api's user settings, each typed and bounded; URLs must be http(s) (they are
    fetched through the guarded fetcher when notifications go out)."""
    out: dict[str, object] = {}
    notify = body.get("notify_type", "email")
    if notify not in NOTIFY_TYPES:
        raise BadInput(f"notify_type must be one of {', '.join(NOTIFY_TYPES)}", status=400)
    out["notify_type"] = notify
    threshold = body.get("quota_warning_threshold", 0)
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 <= threshold <= MAX_QUOTA:
        raise BadInput(f"quota_warning_threshold must be a number from 0 to {MAX_QUOTA}", status=400)
    out["quota_warning_threshold"] = threshold
    for name in (*_URL_FIELDS, *_SECRET_FIELDS, "notification_email"):
        value = get_str(body, name, max_len=2048, default="", strip=True)
        if name in _URL_FIELDS and value and urlsplit(value).scheme not in ("http", "https"):
            raise BadInput(f"{name} must be an http:// or https:// URL", status=400)
        if name == "notification_email" and value and "@" not in value:
            raise BadInput("notification_email is not an email address", status=400)
        out[name] = value
    priority = body.get("gotify_priority", 5)
    if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 10:
        raise BadInput("gotify_priority must be an integer from 0 to 10", status=400)
    out["gotify_priority"] = priority
    flags = ["accept_unset_model_ratio_model", "record_ip_log"]
    if admin:
        flags.append("upstream_model_update_notify_enabled")
    for name in flags:
        value = body.get(name, False)
        if not isinstance(value, bool):
            raise BadInput(f"{name} must be true or false", status=400)
        out[name] = value
    if notify == "webhook" and not out["webhook_url"]:
        raise BadInput("webhook notifications need webhook_url", status=400)
    return out


def settings_view(text: str) -> dict[str, object]:
    """The stored settings, secrets shown only as set or not."""
    try:
        stored = jsonutil.loads(text) if text else {}
    except jsonutil.JSONDecodeError:
        stored = {}
    if not isinstance(stored, dict):
        stored = {}
    return {k: (bool(v) if k in _SECRET_FIELDS else v) for k, v in stored.items()}


@blueprint.put("/api/user/setting")
@require(m.ROLE_USER)
async def update_settings(me: Principal) -> Response:
    fields = _setting_fields(await require_body(), admin=me.user.role >= m.ROLE_ADMIN)
    await m.User.filter(id=me.user.id).update(setting=jsonutil.dumps_str(fields))
    await gateway().feed.publish("user", me.user.id)
    return ok(settings_view(jsonutil.dumps_str(fields)))


@blueprint.get("/api/user/setting")
@require(m.ROLE_USER)
async def get_settings(me: Principal) -> Response:
    row = await m.User.get(id=me.user.id)
    return ok(settings_view(row.setting))
