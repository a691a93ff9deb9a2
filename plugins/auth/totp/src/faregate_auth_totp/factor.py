"""Checking a code: a TOTP code (RFC 6238: SHA-1, 6 digits, 30 s, one step of clock drift
either way) or a backup code, with new-api's lockout (five failures lock the user's 2FA for
five minutes) and replay refusal (a step at or before the last accepted one fails).

The accepted step is recorded with a conditional UPDATE (``… WHERE last_step < step``), so
two requests racing with the same code cannot both pass, on any worker or host."""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import MutableMapping
from typing import Any

import pyotp
from pyotp.utils import strings_equal
from tortoise.expressions import F

from faregate.api import Accounts
from faregate_auth_totp.models import TotpBackupCode, TotpSecret

STEP = 30
DRIFT = 1  # steps accepted either side of now
MAX_FAILURES, LOCK_SECONDS = 5, 300  # new-api's MaxFailAttempts, LockoutDuration
BACKUP_COUNT = 4  # new-api's BackupCodeCount
_BACKUP_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_TOTP_CODE = re.compile(r"[0-9]{6}")
_BACKUP_CODE = re.compile(r"[A-Z0-9]{8}")


def now() -> float:
    """The clock (tests move it to reach the next step)."""
    return time.time()


def new_backup_codes() -> list[str]:
    """new-api's form: ``XXXX-XXXX`` of capitals and digits (41 bits each)."""
    codes = []
    for _ in range(BACKUP_COUNT):
        raw = "".join(secrets.choice(_BACKUP_ALPHABET) for _ in range(8))
        codes.append(f"{raw[:4]}-{raw[4:]}")
    return codes


def normalize_backup(code: str) -> str:
    return code.replace("-", "").replace(" ", "").upper()


def sealed_aad(user_id: int) -> str:
    return f"totp:{user_id}"


class TotpFactor:
    """The ``2fa`` second factor: ``POST /api/verify`` and the admin's reset use it, and,
    since it guards logins (``at_login``), every login of an enrolled user waits for it."""

    method = "2fa"
    at_login = True

    def __init__(self, accounts: Accounts) -> None:
        self.accounts = accounts

    def backup_hash(self, user_id: int, code: str) -> str:
        return self.accounts.digest(normalize_backup(code), f"totp-backup:{user_id}")

    async def store_backup_codes(self, user_id: int, codes: list[str]) -> None:
        await TotpBackupCode.filter(user_id=user_id).delete()
        await TotpBackupCode.bulk_create([TotpBackupCode(user_id=user_id, code_hash=self.backup_hash(user_id, c))
                                          for c in codes])

    async def enrolled(self, user_id: int) -> bool:
        return await TotpSecret.filter(user_id=user_id, enabled=True).exists()

    async def reset(self, user_id: int) -> bool:
        await TotpBackupCode.filter(user_id=user_id).delete()
        return bool(await TotpSecret.filter(user_id=user_id).delete())

    async def verify(self, user_id: int, code: str, session: MutableMapping[str, Any] | None = None) -> bool:
        """A TOTP code or an unused backup code of an enabled enrolment."""
        return await self.check(user_id, code, backup=True)

    async def check(self, user_id: int, code: str, *, backup: bool, pending: bool = False) -> bool:
        """``pending``: the enrolment being set up (``/2fa/enable``) instead of the enabled one."""
        row = await TotpSecret.get_or_none(user_id=user_id, enabled=not pending)
        if row is None:
            return False
        stamp = int(now())
        if row.locked_until > stamp:
            return False  # locked: even the right code waits
        code = code.strip().replace(" ", "")
        passed = await self._totp(row, code)
        if not passed and backup and _BACKUP_CODE.fullmatch(normalize_backup(code)):
            passed = bool(await TotpBackupCode.filter(user_id=user_id, code_hash=self.backup_hash(user_id, code),
                                                      used_at=0).update(used_at=stamp))
        if passed:
            await TotpSecret.filter(id=row.id).update(failed_attempts=0, last_used_at=stamp)
            return True
        await TotpSecret.filter(id=row.id).update(failed_attempts=F("failed_attempts") + 1)
        await TotpSecret.filter(id=row.id, failed_attempts__gte=MAX_FAILURES).update(
            failed_attempts=0, locked_until=stamp + LOCK_SECONDS)
        return False

    async def _totp(self, row: TotpSecret, code: str) -> bool:
        if not _TOTP_CODE.fullmatch(code):
            return False
        totp = pyotp.TOTP(self.accounts.unseal(row.secret_enc, sealed_aad(row.user_id)))
        current = int(now()) // STEP
        for step in range(current - DRIFT, current + DRIFT + 1):
            if step > row.last_step and strings_equal(totp.at(step * STEP), code):
                # the step is used up here, once, whoever races for it
                return bool(await TotpSecret.filter(id=row.id, last_step__lt=step).update(last_step=step))
        return False
