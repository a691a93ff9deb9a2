"""A fake Google OAuth 2.0 token endpoint (``POST /token``), for service accounts' JWT-bearer
grants, on a real loopback TCP port.

It checks what Google checks: ``grant_type`` is the JWT-bearer one; the assertion is a JWT
signed RS256 with the private key of a service account the fake knows (the signature
verified with that account's public key; ``kid`` its ``private_key_id``), its ``iss`` the
account's email, its ``aud`` Google's token endpoint, its ``scope`` set, issued now and for at most
an hour. It answers ``{access_token, expires_in, token_type}`` (``expires_in`` is the fake's
:attr:`~FakeGoogleOAuth.expires_in`) or Google's ``{"error": "invalid_grant",
"error_description"}``. :attr:`~FakeGoogleOAuth.token_requests` counts the grants asked
for; :meth:`~FakeGoogleOAuth.valid` says whether a token is one it issued, unexpired."""

from __future__ import annotations

import base64
import binascii
import secrets
import time
from typing import Any
from urllib.parse import parse_qsl

import orjson

from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_adapter_vertex.testing.accounts import TestServiceAccount

GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
#: the audiences Google's token endpoint takes (google-auth writes the first, whatever the token_uri)
AUDIENCES = ("https://oauth2.googleapis.com/token", "https://www.googleapis.com/oauth2/v4/token")
#: how far an assertion's ``iat`` may be from the fake's clock
SKEW = 300


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class FakeGoogleOAuth(FakeServer):
    """Fake OAuth token endpoint. See the module docstring."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, expires_in: int = 3599) -> None:
        super().__init__(host, port, validate_requests=False)
        self.expires_in = expires_in
        self.accounts: dict[str, TestServiceAccount] = {}
        #: token → (client email, time it expires)
        self.issued: dict[str, tuple[str, float]] = {}

    @property
    def token_requests(self) -> int:
        """The token requests received (answered or refused, faults included)."""
        return sum(1 for r in self.requests if r["path"] == "/token")

    @property
    def token_uri(self) -> str:
        return f"{self.base_url}/token"

    def add(self, account: TestServiceAccount) -> TestServiceAccount:
        self.accounts[account.client_email] = account
        return account

    def valid(self, token: str) -> str | None:
        """The email of the account ``token`` was issued to, when it is one and unexpired."""
        found = self.issued.get(token)
        return found[0] if found is not None and time.time() < found[1] else None

    def error_body(self, status: int, message: str | None = None) -> bytes:
        body: bytes = orjson.dumps({"error": "invalid_request" if status == 400 else "server_error",
                                    "error_description": message or "error"})
        return body

    def _refuse(self, response: Response, error: str, description: str) -> None:
        response.send(400, orjson.dumps({"error": error, "error_description": description}))

    async def answer(self, request: Request, response: Response) -> None:
        if request.method != "POST" or request.path != "/token":
            return response.send(404, self.error_body(404, "Not Found"))
        form = dict(parse_qsl(request.body.decode("utf-8", "replace")))
        if form.get("grant_type") != GRANT:
            return self._refuse(response, "unsupported_grant_type", "Invalid grant_type: " + form.get("grant_type",
                                                                                                       ""))
        problem = self._assertion_problem(form.get("assertion", ""))
        if problem is not None:
            return self._refuse(response, "invalid_grant", problem)
        token = "ya29.fake-" + secrets.token_urlsafe(48)
        claims = orjson.loads(_b64(form["assertion"].split(".")[1]))
        self.issued[token] = (claims["iss"], time.time() + self.expires_in)
        response.send(200, orjson.dumps({"access_token": token, "expires_in": self.expires_in,
                                         "token_type": "Bearer"}))

    def _assertion_problem(self, assertion: str) -> str | None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            head64, claims64, signature64 = assertion.split(".")
            header: Any = orjson.loads(_b64(head64))
            claims: Any = orjson.loads(_b64(claims64))
            signature = _b64(signature64)
        except (ValueError, binascii.Error, orjson.JSONDecodeError):
            return "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
        if not isinstance(header, dict) or header.get("alg") != "RS256" or not isinstance(claims, dict):
            return "Invalid JWT Signature."
        account = self.accounts.get(str(claims.get("iss")))
        if account is None:
            return "Invalid grant: account not found"
        if header.get("kid") not in (None, account.private_key_id):
            return "Invalid JWT Signature."
        try:
            account.public_key.verify(signature, f"{head64}.{claims64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return "Invalid JWT Signature."
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or abs(iat - now) > SKEW or not 0 < exp - iat <= 3600:
            return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
        if claims.get("aud") not in AUDIENCES:
            return "Invalid JWT: the audience is not Google's token endpoint."
        if SCOPE not in str(claims.get("scope", "")).split():
            return "Invalid OAuth scope or ID token audience provided."
        return None
