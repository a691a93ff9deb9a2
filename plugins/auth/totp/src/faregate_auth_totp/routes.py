"""new-api's 2FA routes: status, setup (secret, ``otpauth://`` QR data, backup codes),
enable, disable, new backup codes, and the admin's statistics. The login's second step
(``/api/user/login/2fa``), ``POST /api/verify`` and the admin's removal are the core's,
through :class:`TotpFactor`.

Each route that checks a code counts the guess in the login throttle (per user and per
client) besides the factor's own lockout; the secret is encrypted at rest and shown only
by the setup answer, which is never cached."""

from __future__ import annotations

import time
from typing import Annotated

import pyotp
from pydantic import StringConstraints
from quart import Blueprint, Response
from quart_schema import document_response, validate_request

from faregate.api import ROLE_ADMIN, ROLE_USER, Body, Done, Ok, Principal, Services, Shape, fail, ok, require
from faregate_auth_totp.factor import TotpFactor, new_backup_codes, now, sealed_aad
from faregate_auth_totp.models import TotpBackupCode, TotpSecret


class CodeBody(Body):
    """``{code}``: a six-digit TOTP code (or, where accepted, a backup code)."""

    code: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=32)]


class TwoFactorStatus(Shape):
    enabled: bool
    locked: bool
    backup_codes_remaining: int | None = None


class Setup(Shape):
    secret: str
    qr_code_data: str
    backup_codes: list[str]


class BackupCodes(Shape):
    backup_codes: list[str]


class Stats(Shape):
    total_users: int
    enabled_users: int
    enabled_rate: float


def make_blueprint(services: Services, factor: TotpFactor) -> Blueprint:
    blueprint = Blueprint("auth_totp", __name__)
    accounts = services.accounts

    async def guess(me: Principal, code: str, *, backup: bool, pending: bool = False) -> Response | None:
        """None when the code is right; the refusal otherwise (throttled, or wrong)."""
        key = f"#2fa:{me.user.id}"
        refused = await accounts.throttled(key)
        if refused is not None:
            return refused
        if not await factor.check(me.user.id, code, backup=backup, pending=pending):
            return fail("the code is wrong (or 2FA is locked for a few minutes after repeated failures)")
        await accounts.throttle_passed(key)
        return None

    @blueprint.get("/api/user/2fa/status")
    @require(ROLE_USER)
    @document_response(Ok[TwoFactorStatus])
    async def status(me: Principal) -> Response:
        row = await TotpSecret.get_or_none(user_id=me.user.id)
        data: dict[str, object] = {"enabled": bool(row and row.enabled),
                                   "locked": bool(row and row.locked_until > int(now()))}
        if row is not None and row.enabled:
            data["backup_codes_remaining"] = await TotpBackupCode.filter(user_id=me.user.id, used_at=0).count()
        return ok(data)

    @blueprint.post("/api/user/2fa/setup")
    @require(ROLE_USER)
    @document_response(Ok[Setup])
    async def setup(me: Principal) -> Response:
        """A new secret, pending until ``/2fa/enable`` proves the app has it."""
        if await factor.enrolled(me.user.id):
            return fail("2FA is already enabled: disable it first to set it up again")
        secret = pyotp.random_base32()
        await TotpSecret.filter(user_id=me.user.id).delete()
        await TotpSecret.create(user_id=me.user.id, secret_enc=accounts.seal(secret, sealed_aad(me.user.id)),
                                created_at=int(time.time()))
        codes = new_backup_codes()
        await factor.store_backup_codes(me.user.id, codes)
        issuer = services.options.system_name
        uri = pyotp.TOTP(secret).provisioning_uri(name=me.user.username, issuer_name=issuer)
        response = ok({"secret": secret, "qr_code_data": uri, "backup_codes": codes},
                      "scan the QR code with an authenticator app, then enable 2FA with a code from it")
        response.headers["Cache-Control"] = "no-store"
        return response

    @blueprint.post("/api/user/2fa/enable")
    @require(ROLE_USER)
    @validate_request(CodeBody)
    @document_response(Done)
    async def enable(data: CodeBody, me: Principal) -> Response:
        if await factor.enrolled(me.user.id):
            return fail("2FA is already enabled")
        if not await TotpSecret.exists(user_id=me.user.id):
            return fail("set 2FA up first (POST /api/user/2fa/setup)")
        refused = await guess(me, data.code, backup=False, pending=True)
        if refused is not None:
            return refused
        await TotpSecret.filter(user_id=me.user.id).update(enabled=True)
        await accounts.revoke_sessions(me.user.id, keep_current=True)  # other sessions log in again, with 2FA
        await accounts.record(me.user.id, "enabled two-factor authentication")
        return ok(message="2FA enabled")

    @blueprint.post("/api/user/2fa/disable")
    @require(ROLE_USER)
    @validate_request(CodeBody)
    @document_response(Done)
    async def disable(data: CodeBody, me: Principal) -> Response:
        if not await factor.enrolled(me.user.id):
            return fail("2FA is not enabled")
        refused = await guess(me, data.code, backup=True)
        if refused is not None:
            return refused
        await factor.reset(me.user.id)
        await accounts.revoke_sessions(me.user.id, keep_current=True)
        await accounts.record(me.user.id, "disabled two-factor authentication")
        return ok(message="2FA disabled")

    @blueprint.post("/api/user/2fa/backup_codes")
    @require(ROLE_USER)
    @validate_request(CodeBody)
    @document_response(Ok[BackupCodes])
    async def regenerate(data: CodeBody, me: Principal) -> Response:
        """New backup codes (the old ones stop working); needs a TOTP code, not a backup code."""
        if not await factor.enrolled(me.user.id):
            return fail("2FA is not enabled")
        refused = await guess(me, data.code, backup=False)
        if refused is not None:
            return refused
        codes = new_backup_codes()
        await factor.store_backup_codes(me.user.id, codes)
        response = ok({"backup_codes": codes}, "new backup codes: the old ones no longer work")
        response.headers["Cache-Control"] = "no-store"
        return response

    @blueprint.get("/api/user/2fa/stats")
    @require(ROLE_ADMIN)
    @document_response(Ok[Stats])
    async def stats(me: Principal) -> Response:
        total = await accounts.count()
        enabled = await TotpSecret.filter(enabled=True).count()
        return ok({"total_users": total, "enabled_users": enabled,
                   "enabled_rate": round(enabled / total * 100, 2) if total else 0.0})

    return blueprint
