"""``faregate admin …``: the operator's way in when there is no console session yet
(the first root user, a forgotten password, a key for a script)."""

from __future__ import annotations

import time
from typing import Any

import click

from faregate.cli.runtime import announce, load_gateway, open_database, run_async


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

    run_async(run())


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

    run_async(run())


@admin.command("unlock")
@click.argument("username")
def unlock(username: str) -> None:
    """Lift a user's login lock: forget the failed logins (and failed code guesses) counted
    against the user, from every address."""
    from faregate.accounts.login_throttle import login_throttle_for
    from faregate.management.users import LOGIN_UNLOCK, login_names

    async def run() -> None:
        gateway = load_gateway()
        async with open_database(gateway):
            user = await _user_named(username)
            shared = bool(gateway.settings.redis_url)
            if shared:  # the counters every worker and node reads: cleared here, at once
                shared = await _redis_reachable(gateway.settings.redis_url)
                throttle = login_throttle_for(gateway.settings)
                try:
                    await throttle.unlock(login_names(user))
                finally:
                    await throttle.aclose()
            # each worker forgets its own counters too (all of them without Redis, or what it
            # counted while Redis was unreachable) when the change feed tells it
            await announce(gateway, LOGIN_UNLOCK, user.id)
            if shared:
                click.echo(f"login lock of {username!r} lifted on every node (the counters in Redis)")
            else:
                click.echo(f"login lock of {username!r} lifted: each running worker forgets the failures it "
                           "counted when its change feed tells it, within a second on this host (other hosts: "
                           "within FAREGATE_SYNC_INTERVAL)")

    run_async(run())


async def _redis_reachable(url: str) -> bool:
    import redis.asyncio as aioredis

    client = aioredis.from_url(url)
    try:
        await client.ping()
        return True
    except Exception:  # noqa: BLE001 - said to the operator; the change feed still reaches this host
        click.echo("warning: Redis is unreachable from here; the running workers clear the counters when the "
                   "change feed tells them", err=True)
        return False
    finally:
        await client.aclose()


@admin.command("create-key")
@click.option("--user", "username", required=True, help="The key's owner (username).")
@click.option("--name", default="cli", show_default=True, help="The key's name (at most 64 characters).")
@click.option("--quota", type=click.IntRange(0, 2**62), help="Quota in new-api units (500000 = $1); "
              "without it the key is unlimited (the owner's balance still applies).")
@click.option("--group", default="", help="Group the key relays in (default: the owner's).")
@click.option("--expires-in-days", type=click.IntRange(1, 36500), help="Default: never.")
def create_key(username: str, name: str, quota: int | None, group: str, expires_in_days: int | None) -> None:
    """Create an API key and print it once (sk-…)."""
    from faregate.accounts.key_options import KeyCapReached, issue_key_under_cap

    if len(name) > 64:
        raise click.BadParameter("at most 64 characters", param_hint="--name")

    async def run() -> None:
        gateway = load_gateway()
        async with open_database(gateway):
            user = await _user_named(username)
            await gateway.snapshot.load_options()
            if group:
                if group not in gateway.snapshot.options.group_ratio:
                    raise click.BadParameter(f"group {group!r} has no GroupRatio entry", param_hint="--group")
            expires = int(time.time()) + expires_in_days * 86400 if expires_in_days else -1
            try:  # the key API's rule and words (token_setting.max_user_tokens)
                row, key = await issue_key_under_cap(gateway.box, gateway.snapshot.options, user_id=user.id,
                                                     name=name, group=group, remain_quota=quota or 0,
                                                     unlimited_quota=quota is None, expired_time=expires)
            except KeyCapReached as refused:
                raise click.ClickException(str(refused)) from None
            await announce(gateway, "token", row.id)
            click.echo(f"sk-{key}")
            click.echo(f"key {name!r} (id {row.id}) for {username!r}: shown once, keep it safe", err=True)

    run_async(run())
