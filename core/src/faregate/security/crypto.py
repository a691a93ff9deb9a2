"""Channel keys and API keys encrypted at rest with AES-256-GCM (``enc:v1:`` values)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import string

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from faregate.security.files import private_dir

PREFIX = "enc:v1:"
_ALPHABET = string.ascii_letters + string.digits


class SecretBox:
    def __init__(self, secret: str) -> None:
        self._aead = AESGCM(hashlib.sha256(secret.encode()).digest())
        # a second key from the same secret, for digests (never the encryption key itself)
        self._mac_key = hashlib.sha256(b"faregate-digest:" + secret.encode()).digest()

    def digest(self, value: str, purpose: str) -> str:
        """A keyed hash (HMAC-SHA256, hex) of a short secret such as a backup code or an
        email code: a stolen database alone cannot be searched for the codes."""
        return hmac.new(self._mac_key, f"{purpose}\n{value}".encode(), hashlib.sha256).hexdigest()

    def encrypt(self, plaintext: str, aad: str) -> str:
        nonce = os.urandom(12)
        sealed = self._aead.encrypt(nonce, plaintext.encode(), aad.encode())
        return PREFIX + base64.b64encode(nonce + sealed).decode()

    def decrypt(self, value: str, aad: str) -> str:
        if not value.startswith(PREFIX):
            return value  # legacy plaintext (imported new-api rows); re-encrypted on next write
        raw = base64.b64decode(value[len(PREFIX):])
        return self._aead.decrypt(raw[:12], raw[12:], aad.encode()).decode()


def new_api_key() -> str:
    """48 random alphanumerics, as new-api (clients see it with an ``sk-`` prefix)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(48))


def new_access_token() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(32))


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def mask_key(key: str) -> str:
    return key[:4] + "**********" + key[-4:]


def load_or_create_secret(data_dir: str, name: str) -> str:
    """A per-installation secret kept in ``data_dir`` (mode 0600), for single-node use.
    Several nodes must share one through the environment instead."""
    private_dir(data_dir)
    path = os.path.join(data_dir, name)
    try:
        with open(path) as fh:
            return fh.read().strip()
    except FileNotFoundError:
        value = secrets.token_urlsafe(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(value)
        return value
