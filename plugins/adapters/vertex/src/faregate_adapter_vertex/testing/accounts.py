"""Service accounts for tests: a key file (its JSON, as Google issues it) with a fresh RSA
key, the token endpoint of the caller's choice (a fake's), and the public key the fake token
endpoint checks assertions with."""

from __future__ import annotations

import functools
import secrets
from dataclasses import dataclass
from typing import Any

import orjson

PROJECT = "faregate-vertex-test"


@functools.cache
def _rsa_key(slot: int) -> Any:
    """An RSA key (2048 bits: generating one takes a while, so each slot makes one per process)."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass(frozen=True)
class TestServiceAccount:
    """A service account: ``key`` is the channel key (the key file's JSON)."""

    __test__ = False  # not a test class, whatever pytest thinks of the name

    info: dict[str, Any]
    public_key: Any

    @property
    def key(self) -> str:
        return orjson.dumps(self.info, option=orjson.OPT_INDENT_2).decode()  # as the file comes: many lines

    @property
    def client_email(self) -> str:
        return str(self.info["client_email"])

    @property
    def private_key_id(self) -> str:
        return str(self.info["private_key_id"])

    @property
    def project_id(self) -> str:
        return str(self.info["project_id"])


def make_service_account(token_uri: str, *, project: str = PROJECT, name: str = "gateway", slot: int = 0
                         ) -> TestServiceAccount:
    from cryptography.hazmat.primitives import serialization

    private = _rsa_key(slot)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    email = f"{name}@{project}.iam.gserviceaccount.com"
    info = {"type": "service_account", "project_id": project, "private_key_id": secrets.token_hex(20),
            "private_key": pem, "client_email": email, "client_id": str(10**20 + slot),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{email}",
            "universe_domain": "googleapis.com"}
    return TestServiceAccount(info=info, public_key=private.public_key())
