"""What a user does with their own account (new-api's ``/api/user/self…`` routes): usable
groups, available models, profile and password changes, account deletion, invitation code."""

from __future__ import annotations

import secrets

from quart import Blueprint, Response, session
from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.management.common import fail, gateway, get_str, ok, require, require_body
from faregate.management.system import USERNAME_MAX, check_password
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
    async with in_transaction() as conn:
        token_ids = [t.id for t in await m.Token.filter(user_id=me.user.id).using_db(conn).only("id")]
        await m.Token.filter(user_id=me.user.id).using_db(conn).delete()
        await m.User.filter(id=me.user.id).using_db(conn).delete()
    gw = gateway()
    for token_id in token_ids:
        await gw.feed.publish("token", token_id)
    await gw.feed.publish("user", me.user.id)
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
