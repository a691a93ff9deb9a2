"""A new account, however it signs up (a password, OAuth, Telegram, WeChat): a unique
username, the starting quota, an invitation code of its own, and new-api's invitation
rewards (``QuotaForInvitee`` to the newcomer, ``QuotaForInviter`` to the inviter's
invitation quota, moved into the balance later by ``/api/user/aff_transfer``)."""

from __future__ import annotations

import secrets
import string
import time

from tortoise.exceptions import IntegrityError
from tortoise.expressions import F
from tortoise.functions import Max
from tortoise.transactions import in_transaction

from faregate.db import models as m
from faregate.state.options import Options

AFF_ALPHABET = string.ascii_letters + string.digits
USERNAME_MAX = 20  # new-api's limit
DISPLAY_NAME_MAX = 20


def new_aff_code() -> str:
    return "".join(secrets.choice(AFF_ALPHABET) for _ in range(4))


class SignupError(Exception):
    """The account could not be made; the message says why (shown to the user)."""


async def _free_username(wanted: str, prefix: str) -> str:
    """``wanted`` when it fits and is free, else ``prefix`` + the next id (new-api's
    ``github_12`` style)."""
    wanted = wanted.strip()
    if wanted and len(wanted) <= USERNAME_MAX and not await m.User.filter(username=wanted).exists():
        return wanted
    top = await m.User.annotate(top=Max("id")).first().values("top")
    number = int((top or {}).get("top") or 0) + 1
    for _ in range(20):
        name = f"{prefix}{number}"[:USERNAME_MAX]
        if not await m.User.filter(username=name).exists():
            return name
        number += 1
    raise SignupError("could not find a free username; try again")


async def create_account(options: Options, *, username: str, password_hash: str = "", email: str = "",
                         display_name: str = "", inviter_code: str = "", prefix: str = "user_",
                         exact_username: bool = False) -> tuple[m.User, list[int]]:
    """The new user row and the ids of the users it changed (the inviter). With
    ``exact_username`` a taken name is an error (password sign-up) instead of a fallback."""
    if exact_username:
        if await m.User.filter(username=username).exists():
            raise SignupError("the username is already taken")
        name = username
    else:
        name = await _free_username(username, prefix)
    inviter = await m.User.get_or_none(aff_code=inviter_code) if inviter_code else None
    quota = int(options.value("QuotaForNewUser"))
    invitee_bonus = int(options.value("QuotaForInvitee")) if inviter is not None else 0
    inviter_bonus = int(options.value("QuotaForInviter")) if inviter is not None else 0
    now = int(time.time())
    for _ in range(5):  # a random invitation code of its own, unique
        try:
            async with in_transaction() as conn:
                row = await m.User.create(username=name, password_hash=password_hash, email=email,
                                          display_name=(display_name or name)[:DISPLAY_NAME_MAX],
                                          role=m.ROLE_USER, quota=max(0, quota + invitee_bonus), created_at=now,
                                          aff_code=new_aff_code(), inviter_id=inviter.id if inviter else 0,
                                          using_db=conn)
                if inviter is not None:
                    await m.User.filter(id=inviter.id).using_db(conn).update(
                        aff_count=F("aff_count") + 1, aff_quota=F("aff_quota") + inviter_bonus,
                        aff_history=F("aff_history") + inviter_bonus)
                    if invitee_bonus:
                        await m.Log.create(user_id=row.id, username=row.username, type=m.LOG_SYSTEM, created_at=now,
                                           quota=invitee_bonus, using_db=conn,
                                           content=f"signed up with an invitation code: {invitee_bonus} quota")
                    if inviter_bonus:
                        await m.Log.create(user_id=inviter.id, username=inviter.username, type=m.LOG_SYSTEM,
                                           created_at=now, quota=inviter_bonus, using_db=conn,
                                           content=f"invited {row.username}: {inviter_bonus} invitation quota")
            return row, [inviter.id] if inviter is not None else []
        except IntegrityError:
            if await m.User.filter(username=name).exists():
                if exact_username:
                    raise SignupError("the username is already taken") from None
                name = await _free_username("", prefix)
    raise SignupError("could not create the account; try again")
