"""The ``passkey`` second factor: ``POST /api/verify {"method": "passkey"}`` after
``/api/user/passkey/verify/finish`` (new-api's two steps: the finish leaves a one-time
proof, named in the session, that the verification takes), and the admin's reset."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from faregate.api import Accounts
from faregate_auth_passkeys.ceremony import READY
from faregate_auth_passkeys.models import PasskeyCredential


class PasskeyFactor:
    method = "passkey"
    #: a passkey is its own login; a password login never waits for one
    at_login = False
    #: verified by the ceremony's routes: POST /api/verify needs no code for it
    needs_code = False

    def __init__(self, accounts: Accounts) -> None:
        self.accounts = accounts

    async def enrolled(self, user_id: int) -> bool:
        return await PasskeyCredential.exists(user_id=user_id)

    async def verify(self, user_id: int, code: str, session: MutableMapping[str, Any]) -> bool:
        token = str(session.pop(READY, "") or "")
        proof = await self.accounts.take_secret(READY, token) if token else None
        return proof is not None and proof.user_id == user_id

    async def reset(self, user_id: int) -> bool:
        return bool(await PasskeyCredential.filter(user_id=user_id).delete())
