"""Login, logout, the current user, and access tokens."""

from __future__ import annotations

from quart import Blueprint, Response, session

from faregate.db import models as m
from faregate.management.common import fail, gateway, json_body, ok, require
from faregate.security.crypto import new_access_token
from faregate.security.passwords import verify_password

blueprint = Blueprint("users", __name__)


def user_view(row: m.User, *, quota_held: int = 0) -> dict:
    return {
        "id": row.id, "username": row.username, "display_name": row.display_name, "role": row.role,
        "status": row.status, "email": row.email, "quota": row.quota + quota_held, "used_quota": row.used_quota,
        "request_count": row.request_count, "group": row.group, "aff_code": row.aff_code or "",
        "remark": row.remark,
    }


@blueprint.post("/api/user/login")
async def login() -> Response:
    body = await json_body()
    if not body:
        return fail("invalid parameters")
    username = str(body.get("username") or "")
    password = str(body.get("password") or "")
    if not username or not password:
        return fail("invalid parameters")
    row = await m.User.get_or_none(username=username)
    if row is None and "@" in username:
        row = await m.User.filter(email=username).first()
    if row is None or not verify_password(row.password_hash, password):
        return fail("username or password is wrong, or the user has been banned")
    if row.status != m.USER_ENABLED:
        return fail("username or password is wrong, or the user has been banned")
    session.clear()  # a new session on every login (no fixation)
    session.update({"id": row.id, "username": row.username, "role": row.role, "status": row.status,
                    "group": row.group})
    session.permanent = True
    return ok({"id": row.id, "username": row.username, "display_name": row.display_name, "role": row.role,
               "status": row.status, "group": row.group})


@blueprint.get("/api/user/logout")
async def logout() -> Response:
    session.clear()
    return ok()


@blueprint.get("/api/user/self")
@require(m.ROLE_USER)
async def get_self(me) -> Response:
    row = await m.User.get(id=me.user.id)
    held = await gateway().ledger.held_for("user", row.id)
    data = user_view(row, quota_held=held)
    data["permissions"] = {"admin": row.role >= m.ROLE_ADMIN, "root": row.role >= m.ROLE_ROOT}
    return ok(data)


@blueprint.get("/api/user/token")
@require(m.ROLE_USER)
async def generate_access_token(me) -> Response:
    """A new access token for the management API; replaces the previous one."""
    token = new_access_token()
    await m.User.filter(id=me.user.id).update(access_token=token)
    return ok(token)
