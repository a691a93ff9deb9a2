"""Password hashing: argon2id; new-api's bcrypt hashes are verified and upgraded.

argon2 costs tens of milliseconds of CPU (and 64 MiB) per call by design: the async
helpers run it in a small dedicated thread pool, so a login flood neither stalls the
event loop (argon2-cffi releases the GIL) nor takes every thread of the default pool.
"""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
from concurrent.futures import ThreadPoolExecutor

import bcrypt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

_hasher = PasswordHasher()
#: bounded: each argon2 call holds 64 MiB, so a flood queues here instead of using more
_pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1), thread_name_prefix="faregate-argon2")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


#: the prefixes of bcrypt hashes (new-api's and one-api's), verified with bcrypt
BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")


def verify_password(stored: str, password: str) -> bool:
    if not stored:
        return False
    if stored.startswith(BCRYPT_PREFIXES):
        try:
            return bcrypt.checkpw(password.encode(), stored.encode())
        except ValueError:  # a malformed hash, or a password past bcrypt's 72 bytes
            return False
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


def needs_rehash(stored: str) -> bool:
    """A hash to replace at the next good login: bcrypt (imported from new-api), or
    argon2 with older parameters."""
    if stored.startswith(BCRYPT_PREFIXES):
        return True
    try:
        return _hasher.check_needs_rehash(stored)
    except (InvalidHashError, ValueError):
        return False


@functools.cache
def dummy_hash() -> str:
    """A hash of a random secret with the current parameters: what a login for an
    unknown user is checked against, so it costs what a known user's does."""
    return _hasher.hash(secrets.token_urlsafe(24))


async def hash_password_async(password: str) -> str:
    """:func:`hash_password` off the event loop."""
    return await asyncio.get_running_loop().run_in_executor(_pool, hash_password, password)


async def check_login_password(stored: str | None, password: str) -> bool:
    """Verify ``password`` off the event loop. With no stored hash (unknown user, or a
    user without a password) it verifies against :func:`dummy_hash` and answers False:
    the same work either way, so the answer's timing does not tell whether the user
    exists."""
    loop = asyncio.get_running_loop()
    if not stored:
        await loop.run_in_executor(_pool, _verify_dummy, password)
        return False
    return await loop.run_in_executor(_pool, verify_password, stored, password)


def _verify_dummy(password: str) -> bool:
    # through verify_password, so the unknown-user path is the known-user path exactly
    return verify_password(dummy_hash(), password)
