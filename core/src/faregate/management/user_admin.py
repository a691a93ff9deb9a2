"""Admin operations on users (new-api's ``/api/user`` admin routes): search, update,
manage (disable / enable / delete / promote / demote with new-api's role rules) and
delete. A quota change is applied as a difference, so quota that workers hold in leases
is neither lost nor counted twice."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from pydantic import Field
from quart import Blueprint, Response
from quart_schema import document_response, validate_request
from tortoise.expressions import F
from tortoise.transactions import in_transaction

from faregate.accounts.sessions import revoke_sessions
from faregate.billing.leases import row_with_held, with_held
from faregate.billing.pricing import MAX_QUOTA
from faregate.db import models as m
from faregate.management.common import (
    BadInput,
    fail,
    gateway,
    keyword_match,
    ok,
    page_data,
    page_rows,
    parse_id,
    query_text,
    require,
)
from faregate.management.openapi import Body, Done, Ok, Page, RowId, Shape
from faregate.management.system import PASSWORD_MAX, USERNAME_MAX, check_password
from faregate.management.users import DISPLAY_NAME_MAX, Short, Stripped, UserEcho, UserView, user_view_of, user_views
from faregate.principals import Principal
from faregate.security.passwords import hash_password_async

blueprint = Blueprint("user_admin", __name__)

KEYWORD_MAX = 64
QUOTA_MAX = MAX_QUOTA


#: new-api's answer (user.no_permission_higher_level) when the target's role is not below the caller's
NO_PERMISSION_HIGHER_LEVEL = "No permission to update users of same or higher permission level"


def may_manage(me: Principal, target: m.User) -> bool:
    """new-api's canManageTargetRole: only a higher role manages a user, and root anyone,
    itself included. An admin is not below itself: it cannot edit its own row."""
    return me.user.role > target.role or me.user.role == m.ROLE_ROOT


@blueprint.get("/api/user/search")
@require(m.ROLE_ADMIN)
@document_response(Ok[Page[UserView]])
async def search_users(me: Principal) -> Response:
    """``?keyword=`` (contains, on username, display name or email; or an exact id) and
    ``?group=``."""
    keyword = query_text("keyword", KEYWORD_MAX)
    group = query_text("group", 64)
    query = m.User.all()
    if keyword:
        query = query.filter(keyword_match(keyword, "username", "display_name", "email"))
    if group:
        query = query.filter(group=group)
    rows, total, page, size = await page_rows(with_held("user", query))
    return ok(page_data(user_views(rows), total, page, size))


class UserUpdate(UserEcho):
    """Absent, null (and an empty name or group) leave a field unchanged; an empty email
    or remark clears it. ``original_password`` is the self-service form's, ignored here."""

    id: RowId
    username: Annotated[str, Stripped, Field(max_length=USERNAME_MAX)] | None = None
    display_name: Annotated[str, Stripped, Field(max_length=DISPLAY_NAME_MAX)] | None = None
    group: Annotated[str, Stripped, Field(max_length=64)] | None = None
    email: Annotated[str, Stripped, Field(max_length=128)] | None = None
    remark: Annotated[str, Field(max_length=255)] | None = None
    password: Annotated[str, Field(max_length=PASSWORD_MAX)] | None = None
    original_password: Short | None = None
    quota: Annotated[int, Field(ge=-QUOTA_MAX, le=QUOTA_MAX)] | None = None


@blueprint.put("/api/user/")
@require(m.ROLE_ADMIN)
@validate_request(UserUpdate)
@document_response(Ok[UserView])
async def update_user(data: UserUpdate, me: Principal) -> Response:
    """Partial update of ``{id, username, display_name, password, group, quota, email,
    remark}`` (new-api's UI sends the whole user); roles change only through
    ``/api/user/manage``. As new-api's UpdateUser, an admin may not edit a user of its own
    role or above, itself included (its own quota and group are another admin's or root's
    to set; its name and password go through ``PUT /api/user/self``); root may edit anyone."""
    row = await m.User.get_or_none(id=data.id)
    if row is None:
        return fail("user not found")
    if not may_manage(me, row):
        return fail(NO_PERMISSION_HIGHER_LEVEL)
    fields: dict[str, object] = {}
    for name in ("username", "display_name", "group", "email", "remark"):
        value = getattr(data, name)
        if value is not None and (value or name in ("email", "remark")):
            fields[name] = value
    if "group" in fields and fields["group"] not in gateway().snapshot.options.group_ratio:
        raise BadInput(f"group {fields['group']} has no GroupRatio entry", status=400)
    password = data.password
    if password:
        error = check_password(password)
        if error:
            return fail(error, status=400)
        fields["password_hash"] = await hash_password_async(password)
    quota = data.quota
    gw = gateway()
    async with in_transaction() as conn:
        if fields:
            if "username" in fields and await m.User.filter(username=fields["username"]).exclude(id=row.id).exists():
                return fail("the username is already taken")
            await m.User.filter(id=row.id).using_db(conn).update(**fields)
        if quota is not None:
            # the quota the admin sees includes what workers hold, read in one statement (a lease
            # taken or returned between two reads would be counted twice or not at all): apply
            # the difference, so whatever moves meanwhile still adds up
            now = await row_with_held("user", row.id, "quota")
            shown = row.quota if now is None else now["quota"] + now["held"]
            if quota != shown:
                await m.User.filter(id=row.id).using_db(conn).update(quota=F("quota") + (quota - shown))
                await m.Log.create(user_id=row.id, username=row.username, type=m.LOG_MANAGE,
                                   created_at=int(time.time()), using_db=conn,
                                   content=f"admin {me.user.username} changed the quota from {shown} to {quota}")
    await gw.feed.publish("user", row.id)
    if "password_hash" in fields:  # a password set by an admin ends the user's sessions
        await revoke_sessions(gw.feed, row.id)
    return ok(await user_view_of(row.id))


class ManageUser(Body):
    id: RowId
    action: Literal["disable", "enable", "delete", "promote", "demote"]


class RoleStatus(Shape):
    role: int
    status: int


@blueprint.post("/api/user/manage")
@require(m.ROLE_ADMIN)
@validate_request(ManageUser)
@document_response(Ok[RoleStatus])
async def manage_user(data: ManageUser, me: Principal) -> Response:
    """``{id, action}``: new-api's rules (root is never disabled, deleted or demoted; only
    root promotes, and only to admin). Returns ``{role, status}``."""
    action = data.action
    row = await m.User.get_or_none(id=data.id)
    if row is None:
        return fail("user not found")
    if not may_manage(me, row) or row.id == me.user.id:
        return fail("permission denied: you cannot manage a user of the same or a higher role")
    if row.role == m.ROLE_ROOT and action in ("disable", "delete", "demote"):
        return fail("the root user cannot be disabled, deleted or demoted")
    gw = gateway()
    if action == "delete":
        await delete_user_and_keys(row)
        return ok({"role": row.role, "status": row.status})
    changes: dict[str, int] = {}
    if action == "disable":
        changes["status"] = m.USER_DISABLED
    elif action == "enable":
        changes["status"] = m.USER_ENABLED
    elif action == "promote":
        if me.user.role != m.ROLE_ROOT:
            return fail("only the root user may promote")
        if row.role >= m.ROLE_ADMIN:
            return fail("the user is already an administrator")
        changes["role"] = m.ROLE_ADMIN
    else:
        if row.role < m.ROLE_ADMIN:
            return fail("the user is already a common user")
        changes["role"] = m.ROLE_USER
    await m.User.filter(id=row.id).update(**changes)
    if "role" in changes:  # a new role ends the user's sessions: the next login starts a fresh one
        await revoke_sessions(gw.feed, row.id)
    else:  # a ban needs no revocation: every call checks the status (and a lifted ban keeps the session)
        await gw.feed.publish("user", row.id)
    fresh = await m.User.get(id=row.id)
    return ok({"role": fresh.role, "status": fresh.status})


async def delete_user_and_keys(row: m.User) -> None:
    """The user and their API keys (their logs stay: they are the operator's records)."""
    async with in_transaction() as conn:
        token_ids = [t.id for t in await m.Token.filter(user_id=row.id).using_db(conn).only("id")]
        await m.Token.filter(user_id=row.id).using_db(conn).delete()
        await m.User.filter(id=row.id).using_db(conn).delete()
    gw = gateway()
    await gw.feed.publish_many("token", token_ids)
    await gw.feed.publish("user", row.id)


@blueprint.delete("/api/user/<user_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def delete_user(user_id: str, me: Principal) -> Response:
    row = await m.User.get_or_none(id=parse_id(user_id))
    if row is None:
        return fail("user not found")
    if row.id == me.user.id or not may_manage(me, row) or row.role == m.ROLE_ROOT:
        return fail("permission denied: you cannot delete this user")
    await delete_user_and_keys(row)
    return ok()
