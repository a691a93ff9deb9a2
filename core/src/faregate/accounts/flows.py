"""One-time secrets of sign-in flows (table ``auth_flows``): a pending two-factor login, an
email code, a password reset token, a WebAuthn challenge.

Kept in the database, not in the session cookie: a cookie can be replayed, a row that
``take`` deletes cannot be used twice, and every worker and host sees it. Only a keyed hash
of the secret is stored (:meth:`SecretBox.digest`), bound to its purpose and subject, so
a code for one address or flow is worthless for another."""

from __future__ import annotations

import hmac
import secrets
import time

from tortoise.exceptions import IntegrityError
from tortoise.expressions import F

from faregate.db import models as m
from faregate.security.crypto import SecretBox

#: wrong guesses a code survives before it is destroyed (the login throttle counts too)
MAX_CODE_ATTEMPTS = 5


def now() -> int:
    return int(time.time())


class Flows:
    def __init__(self, box: SecretBox) -> None:
        self._box = box

    def _hash(self, purpose: str, subject: str, secret: str) -> str:
        return self._box.digest(f"{subject}\n{secret}", f"flow:{purpose}")

    async def issue(self, purpose: str, *, ttl: int, secret: str | None = None, subject: str = "",
                    user_id: int = 0, payload: str = "") -> str:
        """Store a new secret (random unless given) and return it. A subject has one live
        secret per purpose: a new code replaces the one sent before."""
        secret = secret or secrets.token_urlsafe(32)
        stamp = now()
        await m.AuthFlow.filter(expires_at__lte=stamp).delete()  # indexed; keeps the table small
        if subject:
            await m.AuthFlow.filter(purpose=purpose, subject=subject).delete()
        await m.AuthFlow.create(purpose=purpose, subject=subject, secret_hash=self._hash(purpose, subject, secret),
                                user_id=user_id, payload=payload, expires_at=stamp + ttl, created_at=stamp)
        return secret

    async def peek(self, purpose: str, secret: str, *, subject: str = "") -> m.AuthFlow | None:
        """The live row of a secret, left in place."""
        if not secret:
            return None
        row = await m.AuthFlow.get_or_none(secret_hash=self._hash(purpose, subject, secret), purpose=purpose)
        return row if row is not None and row.expires_at > now() else None

    async def take(self, purpose: str, secret: str, *, subject: str = "") -> m.AuthFlow | None:
        """The row of a live secret, deleted: of two requests presenting it, one wins."""
        row = await self.peek(purpose, secret, subject=subject)
        if row is None or not await m.AuthFlow.filter(id=row.id).delete():
            return None
        return row

    async def claim(self, purpose: str, secret: str, *, ttl: int) -> bool:
        """Mark ``secret`` used, in one step: True for its first claim within ``ttl``
        seconds, False for every later one. The unique hash decides, so of two racing
        requests exactly one wins (a take-then-issue pair would let a third slip between)."""
        stamp = now()
        secret_hash = self._hash(purpose, "", secret)
        await m.AuthFlow.filter(secret_hash=secret_hash, expires_at__lte=stamp).delete()  # a claim that lapsed
        try:
            await m.AuthFlow.create(purpose=purpose, secret_hash=secret_hash, expires_at=stamp + ttl, created_at=stamp)
        except IntegrityError:
            return False
        return True

    async def live(self, purpose: str) -> int:
        """How many secrets of ``purpose`` are live."""
        return await m.AuthFlow.filter(purpose=purpose, expires_at__gt=now()).count()

    async def take_code(self, purpose: str, subject: str, code: str,
                        max_attempts: int = MAX_CODE_ATTEMPTS) -> m.AuthFlow | None:
        """A short code sent to ``subject`` (an email address): right, it is used up; wrong,
        it counts a failure, and the code dies after ``max_attempts`` of them, so six digits
        cannot be walked through."""
        row = await m.AuthFlow.filter(purpose=purpose, subject=subject, expires_at__gt=now()).first()
        if row is None:
            return None
        if hmac.compare_digest(row.secret_hash, self._hash(purpose, subject, code)):
            return row if await m.AuthFlow.filter(id=row.id).delete() else None
        await m.AuthFlow.filter(id=row.id).update(attempts=F("attempts") + 1)
        await m.AuthFlow.filter(id=row.id, attempts__gte=max_attempts).delete()
        return None

    async def drop(self, purpose: str, *, subject: str = "", user_id: int = 0) -> None:
        """Forget a subject's or a user's live secrets of a purpose."""
        query = m.AuthFlow.filter(purpose=purpose)
        if subject:
            query = query.filter(subject=subject)
        if user_id:
            query = query.filter(user_id=user_id)
        await query.delete()
