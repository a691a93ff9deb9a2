"""Login, logout, the current user, access tokens, and the admin's user list and
user creation."""

from __future__ import annotations

import functools
import secrets
import string
import time
from typing import Annotated, Any, Literal, cast

from pydantic import Field, StringConstraints
from quart import Blueprint, Response, current_app, request
from quart_schema import document_response, validate_request
from tortoise.exceptions import IntegrityError

from faregate import jsonutil
from faregate.accounts.login_throttle import login_throttle_for
from faregate.accounts.user_settings import settings_view
from faregate.billing.leases import held_of, with_held
from faregate.db import models as m
from faregate.management.common import (
    fail,
    gateway,
    guarded,
    ok,
    page_data,
    page_rows,
    parse_id,
    public,
    require,
    too_many,
)
from faregate.management.devices import known_device
from faregate.management.login_answers import complete_login, locked_login
from faregate.management.login_session import end_session
from faregate.management.openapi import INT64, NOT_BOOL, Body, Done, Ok, Page, Shape
from faregate.management.system import USERNAME_MAX, Password
from faregate.principals import Principal
from faregate.security.crypto import key_hash, new_access_token
from faregate.security.passwords import check_login_password, hash_password_async, needs_rehash
from faregate.security.throttle import LoginThrottle

blueprint = Blueprint("users", __name__)

DISPLAY_NAME_MAX = 20
_AFF_ALPHABET = string.ascii_letters + string.digits


class UserView(Shape):
    id: int
    username: str
    display_name: str
    role: int
    status: int
    email: str
    quota: int
    used_quota: int
    request_count: int
    group: str
    aff_code: str
    aff_count: int
    aff_quota: int
    aff_history_quota: int
    inviter_id: int
    remark: str
    DeletedAt: None = Field(description="new-api's soft-delete column (GORM's, under its Go name): always null, "
                                        "a deleted user is gone; its console shows a user with a value as deleted")


class Permissions(Shape):
    admin: bool
    root: bool
    # new-api's: whether the user may arrange the console's sidebar, and the sections it may not show
    sidebar_settings: bool
    sidebar_modules: dict[str, Any]


class SelfView(UserView):
    permissions: Permissions
    setting: str = Field(description="the user's settings as new-api's JSON text (notification settings, "
                                      "sidebar_modules, language …); secrets only as true/false")
    sidebar_modules: str = Field(description="the console's sidebar as the user arranged it (JSON text), or \"\"")
    # the bound outside accounts under new-api's column names ("" when none): its UI shows them
    github_id: str
    discord_id: str
    oidc_id: str
    linux_do_id: str
    telegram_id: str
    wechat_id: str


#: binding providers → new-api's user columns
BINDING_FIELDS = {"github": "github_id", "discord": "discord_id", "oidc": "oidc_id", "linuxdo": "linux_do_id",
                  "telegram": "telegram_id", "wechat": "wechat_id"}


Short = Annotated[str, Field(max_length=255)]
Stripped = StringConstraints(strip_whitespace=True)
LongText = Annotated[str, Field(max_length=65_536)]


class UserEcho(Body):
    """The read-only fields of a user that new-api's web UI sends back (its edit forms PUT
    the whole object they loaded, ours and new-api's own fields): accepted and ignored."""

    role: INT64 | None = None
    status: INT64 | None = None
    used_quota: INT64 | None = None
    request_count: INT64 | None = None
    aff_code: Short | None = None
    aff_count: INT64 | None = None
    aff_quota: INT64 | None = None
    aff_history_quota: INT64 | None = None
    inviter_id: INT64 | None = None
    github_id: Short | None = None
    discord_id: Short | None = None
    oidc_id: Short | None = None
    wechat_id: Short | None = None
    telegram_id: Short | None = None
    linux_do_id: Short | None = None
    verification_code: Short | None = None
    setting: LongText | None = None
    stripe_customer: Short | None = None
    created_at: INT64 | None = None
    last_login_at: INT64 | None = None
    DeletedAt: Short | None = None  # GORM's soft-delete column, under its Go name
    quota_amount: float | None = None  # the UI's quota shown as money
    permissions: dict[str, bool | dict[str, bool | dict[str, bool]]] | None = None
    admin_permissions: dict[str, dict[str, bool]] | None = None
    sidebar_modules: LongText | None = None
    language: Short | None = None


def user_views(rows: list[m.User]) -> list[dict[str, Any]]:
    """Users as :func:`user_view` shows them, each with the quota workers hold leased out of
    it (still the user's money: without it a list shows a balance that jumps as leases
    come and go), the rows read through :func:`~faregate.billing.leases.with_held` (each with
    its leases in one statement: two reads showed a flush's quota twice or not at all)."""
    return [user_view(r, quota_held=held_of(r)) for r in rows]


async def user_view_of(user_id: int) -> dict[str, Any]:
    """The view of a user that exists, read with its leases in one statement."""
    return user_views([await with_held("user", m.User.filter(id=user_id)).get()])[0]


def user_view(row: m.User, *, quota_held: int = 0) -> dict[str, Any]:
    """A user as new-api shows it; never the password hash or the access token."""
    return {
        "id": row.id, "username": row.username, "display_name": row.display_name, "role": row.role,
        "status": row.status, "email": row.email, "quota": row.quota + quota_held, "used_quota": row.used_quota,
        "request_count": row.request_count, "group": row.group, "aff_code": row.aff_code or "",
        # invitation rewards: aff_quota is what POST /api/user/aff_transfer can still move
        "aff_count": row.aff_count, "aff_quota": row.aff_quota, "aff_history_quota": row.aff_history,
        "inviter_id": row.inviter_id, "remark": row.remark, "DeletedAt": None,
    }


_THROTTLE = "faregate.login_throttle"
_WRONG = "username or password is wrong, or the user has been banned"
#: the change-feed kind telling every worker to forget the failures counted against a user
LOGIN_UNLOCK = "login_unlock"


def login_throttle() -> LoginThrottle:
    """This worker's throttle, made on first use from the settings."""
    throttle = current_app.extensions.get(_THROTTLE)
    if throttle is None:
        throttle = current_app.extensions[_THROTTLE] = login_throttle_for(gateway().settings)
        gateway().feed.signals[LOGIN_UNLOCK] = functools.partial(unlock_login, throttle)
    return cast(LoginThrottle, throttle)


def login_names(row: m.User) -> list[str]:
    """The names the login throttle counts guesses at this user under: what a login may
    type (the username, the email address) and the keys of guesses at the user's codes,
    reset links and password from a session."""
    from faregate.management.verification import guess_key  # it imports this module

    names = [row.username, f"#2fa:{row.id}", guess_key(row.id)]
    if row.email:
        names += [row.email, f"#email:{row.email}", f"#reset:{row.email}"]
    return names


async def unlock_login(throttle: LoginThrottle, user_id: int) -> None:
    """Lift the user's login lock in ``throttle`` (``faregate admin unlock``, through the
    change feed: every worker holds counters of its own without Redis)."""
    row = await m.User.get_or_none(id=user_id)
    if row is not None:
        await throttle.unlock(login_names(row))


@blueprint.after_app_serving
async def _close_throttle() -> None:
    throttle = current_app.extensions.pop(_THROTTLE, None)
    if throttle is not None:
        await throttle.aclose()


class Login(Body):
    username: Annotated[str, StringConstraints(strip_whitespace=True, max_length=128)] = ""
    password: Annotated[str, Field(max_length=128)] = ""


class LoginData(Shape):
    id: int
    username: str
    display_name: str
    role: int
    status: int
    group: str


class SecondStepRequired(Shape):
    """new-api's answer for a user with two-factor authentication: finish at
    ``POST /api/user/login/2fa`` (the session remembers the pending login; newer clients
    send ``flow_token`` back)."""

    require_2fa: bool
    flow_token: str
    expires_at: int


@blueprint.post("/api/user/login")
@public
@guarded
@validate_request(Login)
@document_response(Ok[LoginData | SecondStepRequired])
async def login(data: Login) -> Response:
    username, password = data.username, data.password
    if not gateway().snapshot.options.value("PasswordLoginEnabled"):
        return fail("password login is disabled by the administrator")
    if not username or not password:
        return fail("invalid parameters")
    throttle = login_throttle()
    client_ip = request.remote_addr or ""
    refusal = await throttle.attempt(client_ip, username)
    if refusal is not None and not refusal.account_locked:
        # this client's own failures, before the password is looked at: its right one is refused too
        return too_many("failed login attempts", refusal.wait)
    row = await m.User.get_or_none(username=username)
    if row is None and "@" in username:
        row = await m.User.filter(email=username).first()
    device = ""
    if refusal is not None:  # locked by failures from many addresses: a known device is checked as usual
        device = known_device(row.id) if row is not None else ""
        if not device or not await throttle.trusted_device(device):
            return await locked_login(row, password, refusal.wait)
    # an unknown name is checked against a dummy hash: same cost, so timing tells nothing
    if not await check_login_password(row.password_hash if row is not None else None, password):
        return fail(_WRONG)
    assert row is not None
    if row.status != m.USER_ENABLED:
        return fail(_WRONG)
    await throttle.succeeded(client_ip, username, device=device)
    if needs_rehash(row.password_hash):  # new-api's bcrypt (or old parameters) becomes argon2id now
        new_hash = await hash_password_async(password)
        await m.User.filter(id=row.id, password_hash=row.password_hash).update(password_hash=new_hash)
    # a fresh session (no fixation), or new-api's require_2fa step for a user with TOTP
    return await complete_login(row, "password")


@blueprint.get("/api/user/logout")
@public
@document_response(Done)
async def logout() -> Response:
    """Ends this login on every worker and node: a copy of the cookie stops working too."""
    gw = gateway()
    await end_session(gw.feed, gw.snapshot.users)
    return ok()


def sidebar_permissions(role: int) -> dict[str, Any]:
    """new-api's: root has every section and arranges none; an admin may not show the system
    settings; a user has no admin section."""
    if role >= m.ROLE_ROOT:
        return {"sidebar_settings": False, "sidebar_modules": {}}
    if role >= m.ROLE_ADMIN:
        return {"sidebar_settings": True, "sidebar_modules": {"admin": {"setting": False}}}
    return {"sidebar_settings": True, "sidebar_modules": {"admin": False}}


@blueprint.get("/api/user/self")
@require(m.ROLE_USER)
@document_response(Ok[SelfView])
async def get_self(me: Principal) -> Response:
    row = await with_held("user", m.User.filter(id=me.user.id)).first()
    if row is None:
        return fail("user not found")
    data = user_views([row])[0]
    data["permissions"] = {"admin": row.role >= m.ROLE_ADMIN, "root": row.role >= m.ROLE_ROOT,
                           **sidebar_permissions(row.role)}
    settings = settings_view(row.setting)
    data["setting"] = jsonutil.dumps_str(settings) if row.setting else ""
    sidebar = settings.get("sidebar_modules")
    data["sidebar_modules"] = sidebar if isinstance(sidebar, str) else ""
    data.update(dict.fromkeys(BINDING_FIELDS.values(), ""))
    for binding in await m.UserBinding.filter(user_id=row.id):
        if binding.provider in BINDING_FIELDS:
            data[BINDING_FIELDS[binding.provider]] = binding.subject
    return ok(data)


@blueprint.get("/api/user/token")
@require(m.ROLE_USER)
@document_response(Ok[str])
async def generate_access_token(me: Principal) -> Response:
    """A new access token for the management API; replaces the previous one."""
    token = new_access_token()
    # only its hash is stored: the token is shown once, here, and never sits in the database
    await m.User.filter(id=me.user.id).update(access_token=key_hash(token))
    response = ok(token)
    response.headers["Cache-Control"] = "no-store"
    return response


# -- admin ---------------------------------------------------------------------------
@blueprint.get("/api/user/")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[UserView]])
async def list_users(me: Principal) -> Response:
    rows, total, page, size = await page_rows(with_held("user", m.User.all()))
    return ok(page_data(user_views(rows), total, page, size))


@blueprint.get("/api/user/<user_id>")
@require(m.ROLE_ADMIN)
@document_response(Ok[UserView])
async def get_user(user_id: str, me: Principal) -> Response:
    row = await with_held("user", m.User.filter(id=parse_id(user_id))).first()
    if row is None:
        return fail("user not found")
    # new-api: only a higher role (or root) may look at a user
    if row.id != me.user.id and me.user.role <= row.role and me.user.role != m.ROLE_ROOT:
        return fail("permission denied: insufficient role")
    return ok(user_views([row])[0])


class UserCreate(Body):
    username: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=USERNAME_MAX)]
    password: Password
    display_name: Annotated[str, Field(max_length=DISPLAY_NAME_MAX)] = ""
    # guest, common, admin, root; 0 is the column default's trigger in new-api (GORM
    # default:1): a common user
    role: Annotated[Literal[0, 1, 10, 100], NOT_BOOL] = 1
    remark: Annotated[str, Field(max_length=255)] = ""


@blueprint.post("/api/user/")
@require(m.ROLE_ADMIN)
@validate_request(UserCreate)
@document_response(Ok[UserView])
async def create_user(data: UserCreate, me: Principal) -> Response:
    """new-api's CreateUser: ``{username, password, display_name, role, remark}``; the
    new user's role must be below the caller's."""
    username, password = data.username, data.password
    display_name = data.display_name or username
    role = data.role or m.ROLE_USER
    if role >= me.user.role:
        return fail("cannot create a user with a role equal to or above your own")
    if await m.User.filter(username=username).exists():
        return fail("the username is already taken")
    quota = int(gateway().snapshot.options.value("QuotaForNewUser"))
    row = None
    password_hash = await hash_password_async(password)
    for _ in range(5):  # a random 4-character invitation code, unique as new-api's
        try:
            row = await m.User.create(username=username, password_hash=password_hash, display_name=display_name,
                                      role=role, quota=max(0, quota), created_at=int(time.time()), remark=data.remark,
                                      aff_code="".join(secrets.choice(_AFF_ALPHABET) for _ in range(4)))
            break
        except IntegrityError:
            if await m.User.filter(username=username).exists():
                return fail("the username is already taken")
    if row is None:
        return fail("could not create the user; try again")
    await gateway().feed.publish("user", row.id)
    return ok(user_view(row))
