"""Outside identities bound to accounts (new-api's github_id, discord_id, oidc_id,
linux_do_id, telegram_id and wechat_id): the user's list and unbinding, the admin's view
and clearing. The sign-in plugins (OAuth, Telegram, WeChat) bind them; the core keeps the
table, so these routes work whichever of them is installed."""

from __future__ import annotations

import re

from quart import Blueprint, Response
from quart_schema import document_response

from faregate.db import models as m
from faregate.management.common import BadInput, fail, gateway, ok, parse_id, require
from faregate.management.openapi import Done, Ok, Shape
from faregate.management.user_admin import may_manage
from faregate.principals import Principal

blueprint = Blueprint("bindings", __name__)

_PROVIDER = re.compile(r"[a-z0-9_]{1,32}")
#: new-api's binding_type names, as the admin's route takes them
ALIASES = {"linux_do": "linuxdo"}


class Binding(Shape):
    provider: str
    provider_user_id: str
    created_at: int


def _provider(value: str) -> str:
    value = value.strip().lower()
    if not _PROVIDER.fullmatch(value):
        raise BadInput("provider must be 1 to 32 lower-case letters, digits or _", status=400)
    return ALIASES.get(value, value)


async def _list(user_id: int) -> Response:
    rows = await m.UserBinding.filter(user_id=user_id).order_by("provider")
    return ok([{"provider": r.provider, "provider_user_id": r.subject, "created_at": r.created_at} for r in rows])


@blueprint.get("/api/user/oauth/bindings")
@require(m.ROLE_USER)
@document_response(Ok[list[Binding]])
async def my_bindings(me: Principal) -> Response:
    return await _list(me.user.id)


@blueprint.delete("/api/user/oauth/bindings/<provider>")
@require(m.ROLE_USER)
@document_response(Done)
async def unbind_mine(provider: str, me: Principal) -> Response:
    """Refused when it is the account's only way in (no password, no other binding)."""
    name = _provider(provider)
    row = await m.User.get(id=me.user.id)
    others = await m.UserBinding.filter(user_id=row.id).exclude(provider=name).count()
    if not row.password_hash and not others:
        return fail("this is the only way into the account: set a password (or bind another login) first")
    if not await m.UserBinding.filter(user_id=row.id, provider=name).delete():
        return fail(f"no {name} account is bound")
    await gateway().services.accounts.record(row.id, f"unbound the {name} account")
    return ok(message="unbound")


@blueprint.get("/api/user/<user_id>/oauth/bindings")
@require(m.ROLE_ADMIN)
@document_response(Ok[list[Binding]])
async def user_bindings(user_id: str, me: Principal) -> Response:
    row = await m.User.get_or_none(id=parse_id(user_id))
    if row is None:
        return fail("user not found")
    if row.id != me.user.id and not may_manage(me, row):
        return fail("permission denied: insufficient role")
    return await _list(row.id)


@blueprint.delete("/api/user/<user_id>/oauth/bindings/<provider_id>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def unbind_for_user(user_id: str, provider_id: str, me: Principal) -> Response:
    """new-api's UnbindCustomOAuthByAdmin, the admin's side of the user's own
    ``DELETE /api/user/oauth/bindings/{provider}``: the provider is named as
    ``GET /api/user/{id}/oauth/bindings`` lists it (``github``, ``oidc`` …). As in new-api, a
    binding the user does not have is removed without complaint."""
    name = _provider(provider_id)
    row = await m.User.get_or_none(id=parse_id(user_id))
    if row is None:
        return fail("user not found")
    if not may_manage(me, row):
        return fail("permission denied: you cannot change a user of the same or a higher role")
    if await m.UserBinding.filter(user_id=row.id, provider=name).delete():
        await gateway().services.accounts.record(row.id, f"admin {me.user.username} removed the {name} binding")
    return ok(message="success")


@blueprint.delete("/api/user/<user_id>/bindings/<binding_type>")
@require(m.ROLE_ADMIN)
@document_response(Done)
async def clear_binding(user_id: str, binding_type: str, me: Principal) -> Response:
    """new-api's AdminClearUserBinding (``github``, ``discord``, ``oidc``, ``linux_do``,
    ``telegram``, ``wechat``)."""
    name = _provider(binding_type)
    row = await m.User.get_or_none(id=parse_id(user_id))
    if row is None:
        return fail("user not found")
    if not may_manage(me, row):
        return fail("permission denied: you cannot change a user of the same or a higher role")
    if not await m.UserBinding.filter(user_id=row.id, provider=name).delete():
        return fail(f"the user has no {name} binding")
    await gateway().services.accounts.record(row.id, f"admin {me.user.username} cleared the {name} binding")
    return ok(message="success")
