"""``faregate admin …``: the operator's way in when there is no console session yet
(the first root user, a forgotten password, a key for a script)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import click

from faregate.cli.runtime import announce, load_gateway, open_database


def _password_ok(ctx: click.Context, param: click.Parameter, value: str) -> str:
    from faregate.management.system import check_password

    problem = check_password(value)
    if problem:
        raise click.BadParameter(problem)
    return value


_password = click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True,
                         callback=_password_ok, envvar="FAREGATE_ADMIN_PASSWORD", show_envvar=True,
                         help="The password (prompted for when not given; never echoed).")


async def _user_named(username: str) -> Any:
    from faregate.db import models as m

    user = await m.User.get_or_none(username=username)
    if user is None:
        raise click.ClickException(f"no user named {username!r}")
    return user


@click.group()
def admin() -> None:
    """Users and keys, without the API."""


@admin.command("create-root")
@click.option("--username", default="root", show_default=True)
@_password
def create_root(username: str, password: str) -> None:
    """Create the root user of a new installation (as POST /api/setup does)."""
    from faregate.accounts.root import AlreadyInitialised
    from faregate.accounts.root import create_root as make_root

    async def run() -> None:
        gateway = load_gateway()
        async with open_database(gateway):
            try:
                user = await make_root(username.strip(), password)
            except AlreadyInitialised:
                raise click.ClickException("the system is already initialised (a root user exists)") from None
            await announce(gateway, "user", user.id)
            click.echo(f"root user {user.username!r} created (id {user.id})")

    asyncio.run(run())


@admin.command("reset-password")
@click.argument("username")
@_password
def reset_password(username: str, password: str) -> None:
    """Set a user's password."""
    from faregate.db import models as m
    from faregate.security.passwords import hash_password_async

    async def run() -> None:
        gateway = load_gateway()
        async with open_database(gateway):
            user = await _user_named(username)
            password_hash = await hash_password_async(password)
            await m.User.filter(id=user.id).update(password_hash=password_hash)
            await announce(gateway, "user", user.id)
            click.echo(f"password of {username!r} changed")

    asyncio.run(run())


@admin.command("create-key")
@click.option("--user", "username", required=True, help="The key's owner (username).")
@click.option("--name", default="cli", show_default=True, help="The key's name (at most 64 characters).")
@click.option("--quota", type=click.IntRange(0, 2**62), help="Quota in new-api units (500000 = $1); "
              "without it the key is unlimited (the owner's balance still applies).")
@click.option("--group", default="", help="Group the key relays in (default: the owner's).")
@click.option("--expires-in-days", type=click.IntRange(1, 36500), help="Default: never.")
def create_key(username: str, name: str, quota: int | None, group: str, expires_in_days: int | None) -> None:
    """Create an API key and print it once (sk-…)."""
    from faregate.accounts.keys import issue_key

    if len(name) > 64:
        raise click.BadParameter("at most 64 characters", param_hint="--name")

    async def run() -> None:
        gateway = load_gateway()
        async with open_database(gateway):
            user = await _user_named(username)
            if group:
                await gateway.snapshot.load_options()
                if group not in gateway.snapshot.options.group_ratio:
                    raise click.BadParameter(f"group {group!r} has no GroupRatio entry", param_hint="--group")
            expires = int(time.time()) + expires_in_days * 86400 if expires_in_days else -1
            row, key = await issue_key(gateway.box, user_id=user.id, name=name, group=group,
                                       remain_quota=quota or 0, unlimited_quota=quota is None, expired_time=expires)
            await announce(gateway, "token", row.id)
            click.echo(f"sk-{key}")
            click.echo(f"key {name!r} (id {row.id}) for {username!r}: shown once, keep it safe", err=True)

    asyncio.run(run())
