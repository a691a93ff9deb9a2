"""What a user does with their own account (new-api's ``/api/user/self…`` routes): usable
groups, available models, profile and password changes, account deletion, invitation code,
notification settings."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from quart import Blueprint, Response, session
from quart_schema import document_response, validate_request
from tortoise.exceptions import IntegrityError

from faregate import jsonutil
from faregate.accounts.notify import url_problem
from faregate.accounts.user_settings import (
    SECRET_FIELDS,
    SettingsBusy,
    change_settings,
    settings_view,
    stored_settings,
)
from faregate.billing.groups import AUTO
from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m
from faregate.management.common import BadInput, fail, gateway, ok, public, require
from faregate.management.login_session import renew_own_session
from faregate.management.openapi import INT64, Body, Done, Ok, Shape
from faregate.management.system import PASSWORD_MAX, USERNAME_MAX, check_password
from faregate.management.user_admin import delete_user_and_keys
from faregate.management.users import (
    _AFF_ALPHABET,
    DISPLAY_NAME_MAX,
    Short,
    Stripped,
    UserEcho,
    UserView,
    user_view_of,
)
from faregate.management.verification import enrolled_methods, guess_key, recently_verified
from faregate.net import allowed_categories
from faregate.principals import Principal
from faregate.security.passwords import check_login_password, hash_password_async

blueprint = Blueprint("user_self", __name__)


class GroupInfo(Shape):
    ratio: float | str = Field(description="the price multiplier in this group; \"auto\" for the auto group")
    desc: str


def _groups(user_group: str) -> Response:
    """new-api's GetUserGroups: each usable group with what the user pays in it (the user
    group's ``GroupGroupRatio`` over ``GroupRatio``); ``auto``, where usable, with the ratio
    ``"auto"`` (its keys pay the ratio of the group that serves them)."""
    options = gateway().snapshot.options
    return ok({name: {"ratio": AUTO if name == AUTO else options.group_ratio_for(user_group, name), "desc": desc}
               for name, desc in options.usable_groups(user_group).items()})


@blueprint.get("/api/user/self/groups")
@require(m.ROLE_USER)
@document_response(Ok[dict[str, GroupInfo]])
async def self_groups(me: Principal) -> Response:
    """``{group: {ratio, desc}}`` for every group the user may give a key, with the ratio
    the user pays there."""
    return _groups(me.user.group)


@blueprint.get("/api/user/groups")
@public
@document_response(Ok[dict[str, GroupInfo]])
async def usable_groups() -> Response:
    """The same without a session too: a visitor sees the groups every user may use
    (``UserUsableGroups``), a logged-in user also their own."""
    user = gateway().services.accounts.session_user()
    return _groups(user.group if user is not None else "")


@blueprint.get("/api/user/models")
@require(m.ROLE_USER)
@document_response(Ok[list[str]])
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


def _sidebar_modules(value: str) -> str:
    if value.strip():
        try:
            parsed = jsonutil.loads(value)
        except jsonutil.JSONDecodeError:
            raise ValueError("must be a JSON object") from None
        if not isinstance(parsed, dict):
            raise ValueError("must be a JSON object")
    return value


#: the console's sidebar: which of its sections and pages the user shows (new-api's JSON text)
SidebarModules = Annotated[str, Field(max_length=16_384), AfterValidator(_sidebar_modules)]
#: a language tag as the console sends it (zh-CN, en, ja …)
Language = Annotated[str, StringConstraints(max_length=35, pattern=r"^[A-Za-z]{0,8}(?:[-_][A-Za-z0-9]{1,8})*$")]


class SelfUpdate(UserEcho):
    """``{username?, display_name?, password?, original_password}``; absent, null or empty
    leaves a field unchanged. ``sidebar_modules`` (the console's sidebar, JSON text) and
    ``language`` are kept in the user's settings, as new-api does. The rest of a user
    (new-api's UI sends the whole object it loaded) is accepted and ignored: a user changes
    neither quota, group nor email here."""

    sidebar_modules: SidebarModules | None = None
    language: Language | None = None
    username: Annotated[str, Stripped, Field(max_length=USERNAME_MAX)] | None = None
    display_name: Annotated[str, Stripped, Field(max_length=DISPLAY_NAME_MAX)] | None = None
    password: Annotated[str, Field(max_length=PASSWORD_MAX)] | None = None
    original_password: Annotated[str, Field(max_length=128)] | None = None
    id: INT64 | None = None
    quota: INT64 | None = None
    group: Short | None = None
    email: Short | None = None
    remark: Short | None = None


async def _may_change_password(row: m.User, original: str, me: Principal) -> Response | None:
    """None when the caller may set a new password, else the answer. With a password: the
    current one, guessed only through the login throttle (the budget /api/verify's password
    check spends too), so a stolen session cannot walk through passwords here. Without one
    (an account made by OAuth, Telegram, WeChat): the login session alone, as new-api, or a
    secure verification within five minutes when a second factor is enrolled."""
    accounts = gateway().services.accounts
    if row.password_hash:
        refused = await accounts.throttled(guess_key(row.id))
        if refused is not None:
            return refused
        if not await check_login_password(row.password_hash, original):
            return fail("the original password is wrong")
        await accounts.throttle_passed(guess_key(row.id))
        return None
    if me.via != "session":  # a token must not turn into a password login
        return fail("setting a first password needs a login session, not an access token", status=401)
    if await enrolled_methods(row.id) and not recently_verified(row.id):
        return fail("secure verification required: POST /api/verify first", status=403, code="VERIFICATION_REQUIRED")
    return None


@blueprint.put("/api/user/self")
@require(m.ROLE_USER)
@validate_request(SelfUpdate)
@document_response(Ok[UserView])
async def update_self(data: SelfUpdate, me: Principal) -> Response:
    """A new password needs the current one, or, for an account without one, the session."""
    preferences = {name: getattr(data, name) for name in ("sidebar_modules", "language")
                   if getattr(data, name) is not None}
    if preferences:  # the console saves these alone (as new-api takes them), or echoes them unchanged
        row = await m.User.get(id=me.user.id).only("id", "setting")
        if any(stored_settings(row.setting).get(k, "") != v for k, v in preferences.items()):
            await _save_settings(me.user.id, lambda stored: {**stored, **preferences})
    row = await m.User.get(id=me.user.id)
    fields: dict[str, object] = {}
    for name in ("username", "display_name"):
        value = getattr(data, name)
        if value:
            fields[name] = value
    password = data.password
    if password:
        refused = await _may_change_password(row, data.original_password or "", me)
        if refused is not None:
            return refused
        error = check_password(password)
        if error:
            return fail(error, status=400)
        fields["password_hash"] = await hash_password_async(password)
    if fields:
        try:
            await m.User.filter(id=row.id).update(**fields)
        except IntegrityError:
            return fail("the username is already taken")
        await gateway().feed.publish("user", row.id)
        if "password_hash" in fields:  # every other session of the user ends; this one is re-issued
            await renew_own_session(gateway().feed, row.id)
    return ok(await user_view_of(row.id))


@blueprint.delete("/api/user/self")
@require(m.ROLE_USER)
@document_response(Done)
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
@document_response(Ok[str])
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
Url = Annotated[str, Stripped, Field(max_length=2048)]
#: a secret as the GET shows it (true: one is stored) may be sent back: the stored one stays
Secret = Annotated[str, Field(max_length=2048)] | bool
#: the notification form's keys (the rest of the stored object, the console's preferences, stays)
NOTIFY_FIELDS = ("notify_type", "quota_warning_threshold", "webhook_url", "webhook_secret", "notification_email",
                 "bark_url", "gotify_url", "gotify_token", "gotify_priority", "accept_unset_model_ratio_model",
                 "record_ip_log", "upstream_model_update_notify_enabled")


class SettingsUpdate(Body):
    """new-api's user settings. URLs must be http(s) (notifications fetch them through the
    guarded fetcher); a secret sent as ``true``/``false`` (what the GET shows) keeps the
    stored one. ``upstream_model_update_notify_enabled`` is an admin's: from anyone else
    it is ignored, as in new-api."""

    notify_type: Literal["email", "webhook", "bark", "gotify"] = "email"
    quota_warning_threshold: Annotated[float, Field(gt=0, le=MAX_QUOTA)]
    webhook_url: Url = ""
    webhook_secret: Secret = ""
    notification_email: Annotated[str, Stripped, Field(max_length=254)] = ""
    bark_url: Url = ""
    gotify_url: Url = ""
    gotify_token: Secret = ""
    gotify_priority: Annotated[int, Field(ge=0, le=10)] = 5
    accept_unset_model_ratio_model: bool = False
    record_ip_log: bool = False
    upstream_model_update_notify_enabled: bool | None = None
    # the rest of the stored settings, as the GET shows them: kept as stored, whatever is sent
    sidebar_modules: Annotated[str, Field(max_length=16_384)] | None = None
    language: Annotated[str, Field(max_length=35)] | None = None
    billing_preference: Annotated[str, Field(max_length=64)] | None = None


class Settings(BaseModel):
    """The stored settings; a secret only as whether one is set. The console's preferences
    (``sidebar_modules``, ``language``) and what an older version stored are shown as they are."""

    model_config = ConfigDict(extra="allow")
    notify_type: str | None = None
    quota_warning_threshold: float | None = None
    webhook_url: str | None = None
    webhook_secret: bool | None = None
    notification_email: str | None = None
    bark_url: str | None = None
    gotify_url: str | None = None
    gotify_token: bool | None = None
    gotify_priority: int | None = None
    accept_unset_model_ratio_model: bool | None = None
    record_ip_log: bool | None = None
    upstream_model_update_notify_enabled: bool | None = None
    sidebar_modules: str | None = None
    language: str | None = None


def _setting_fields(data: SettingsUpdate, stored: dict[str, object], *, admin: bool) -> dict[str, object]:
    """The notification settings to store over ``stored``, checked (a :class:`BadInput` 400)."""
    fields = data.model_dump(include=set(NOTIFY_FIELDS) - {"upstream_model_update_notify_enabled"})
    # the SSRF rules of the fetches these URLs get (as far as they can be checked without DNS)
    allow = allowed_categories(gateway().settings.get("notify_private_addresses", "deny"))
    for name in ("webhook_url", "bark_url", "gotify_url"):
        problem = url_problem(str(fields[name]), allow) if fields[name] else None
        if problem is not None:
            raise BadInput(f"{name} {problem}", status=400)
    if fields["notification_email"] and "@" not in str(fields["notification_email"]):
        raise BadInput("notification_email is not an email address", status=400)
    for name in SECRET_FIELDS:
        if isinstance(fields[name], bool):
            fields[name] = stored.get(name, "") if isinstance(stored.get(name), str) else ""
    needed = {"webhook": ("webhook_url",), "bark": ("bark_url",), "gotify": ("gotify_url", "gotify_token")}
    for name in needed.get(data.notify_type, ()):
        if not fields[name]:
            raise BadInput(f"{data.notify_type} notifications need {name}", status=400)
    flag = data.upstream_model_update_notify_enabled
    if admin and flag is not None:
        fields["upstream_model_update_notify_enabled"] = flag
    elif "upstream_model_update_notify_enabled" in stored:
        fields["upstream_model_update_notify_enabled"] = stored["upstream_model_update_notify_enabled"]
    return fields


async def _save_settings(user_id: int, change: Callable[[dict[str, Any]], dict[str, Any]]) -> str:
    try:
        text = await change_settings(user_id, change)
    except SettingsBusy as busy:
        raise BadInput(str(busy)) from None
    if text is None:
        raise BadInput("user not found")
    await gateway().feed.publish("user", user_id)
    return text


@blueprint.put("/api/user/setting")
@require(m.ROLE_USER)
@validate_request(SettingsUpdate)
@document_response(Ok[Settings])
async def update_settings(data: SettingsUpdate, me: Principal) -> Response:
    """The notification form: its keys are replaced, the rest of the stored settings (the
    sidebar, the language) stays."""
    admin = me.user.role >= m.ROLE_ADMIN

    def change(stored: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in stored.items() if k not in NOTIFY_FIELDS}
        return {**kept, **_setting_fields(data, stored, admin=admin)}

    return ok(settings_view(await _save_settings(me.user.id, change)))


@blueprint.get("/api/user/setting")
@require(m.ROLE_USER)
@document_response(Ok[Settings])
async def get_settings(me: Principal) -> Response:
    row = await m.User.get(id=me.user.id)
    return ok(settings_view(row.setting))
