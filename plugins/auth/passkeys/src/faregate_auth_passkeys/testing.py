"""A software authenticator for tests (cryptography's ES256 keys, CBOR by cbor2): it answers
``navigator.credentials.create()`` with attestation ``none`` and ``.get()`` with a signed
assertion, as a browser with a platform authenticator would, so the whole ceremony runs
against a real gateway. Its counter and what it signs can be bent to play an attacker
(a replayed assertion, a cloned key whose counter went back, another origin)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from typing import Any

import cbor2
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec

UP, UV, AT = 0x01, 0x04, 0x40


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SoftAuthenticator:
    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.credential_id = os.urandom(32)
        self.user_handle = b""
        self.sign_count = 0
        self.rp_id = ""

    def _cose_key(self) -> bytes:
        numbers = self.key.public_key().public_numbers()
        return cbor2.dumps({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})

    def _client_data(self, kind: str, challenge: str, origin: str | None) -> bytes:
        return json.dumps({"type": kind, "challenge": challenge, "origin": origin or self.origin,
                           "crossOrigin": False}).encode()

    def create(self, options: dict[str, Any], *, origin: str | None = None) -> dict[str, Any]:
        """The registration credential for ``options`` (what the gateway's begin answered)."""
        self.rp_id = options["rp"]["id"]
        self.user_handle = unb64url(options["user"]["id"])
        attested = bytes(16) + struct.pack(">H", len(self.credential_id)) + self.credential_id + self._cose_key()
        auth_data = (hashlib.sha256(self.rp_id.encode()).digest() + bytes([UP | UV | AT])
                     + struct.pack(">I", self.sign_count) + attested)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": auth_data})
        client_data = self._client_data("webauthn.create", options["challenge"], origin)
        return {"id": b64url(self.credential_id), "rawId": b64url(self.credential_id), "type": "public-key",
                "response": {"clientDataJSON": b64url(client_data), "attestationObject": b64url(attestation),
                             "transports": ["internal"]},
                "authenticatorAttachment": "platform", "clientExtensionResults": {}}

    def get(self, options: dict[str, Any], *, origin: str | None = None, count: int | None = None) -> dict[str, Any]:
        """A signed assertion for ``options``; the counter goes up by one (or is ``count``)."""
        self.sign_count = self.sign_count + 1 if count is None else count
        auth_data = (hashlib.sha256(options.get("rpId", self.rp_id).encode()).digest() + bytes([UP | UV])
                     + struct.pack(">I", self.sign_count))
        client_data = self._client_data("webauthn.get", options["challenge"], origin)
        signature = self.key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
        return {"id": b64url(self.credential_id), "rawId": b64url(self.credential_id), "type": "public-key",
                "response": {"clientDataJSON": b64url(client_data), "authenticatorData": b64url(auth_data),
                             "signature": b64url(signature), "userHandle": b64url(self.user_handle)},
                "authenticatorAttachment": "platform", "clientExtensionResults": {}}
