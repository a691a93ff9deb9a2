"""Talking to the provider: the endpoints (official, a test base URL, or OIDC discovery),
trading the code for a token (with the PKCE verifier when the flow had one), reading the
profile, and for OIDC verifying the id_token against the provider's JWKS (signature,
issuer, audience, expiry, nonce) and checking that the profile is the same subject.

Every request goes through the core's guarded fetcher (no cloud metadata or link-local
address ever; loopback and private ones only with ``oauth_private_addresses=allow``), with
bounded answers and timeouts. Error messages name what failed, never a token or secret."""

from __future__ import annotations

import asyncio
import base64
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from faregate.api import AddressCategory, FetchError, GuardedFetcher, Services, json_dumps, json_loads
from faregate_auth_oauth.providers import Profile, Provider

MAX_BYTES = 1 << 20
TIMEOUT = 10.0
DISCOVERY_TTL = 600.0
_PRIVATE = frozenset({AddressCategory.LOOPBACK, AddressCategory.PRIVATE})
ID_TOKEN_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"]


class OAuthFailed(Exception):
    """The provider refused or answered nonsense; the message is safe to show."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    authorize: str
    token: str
    userinfo: str
    issuer: str = ""
    jwks_uri: str = ""


def _rebase(url: str, base: str) -> str:
    if not base:
        return url
    new, old = urlsplit(base.rstrip("/")), urlsplit(url)
    return urlunsplit((new.scheme, new.netloc, new.path + old.path, old.query, ""))


class OAuthClient:
    def __init__(self, services: Services) -> None:
        self.services = services
        self._discovered: dict[str, tuple[float, Endpoints, dict[str, Any]]] = {}

    def _fetcher(self) -> GuardedFetcher:
        allow = _PRIVATE if self.services.settings.get("oauth_private_addresses", "deny") == "allow" else ()
        return GuardedFetcher(allow=allow, max_bytes=MAX_BYTES, timeout=TIMEOUT, connect_timeout=5.0)

    async def _json(self, url: str, *, method: str = "GET", headers: dict[str, str] | None = None,
                    content: bytes | None = None, what: str) -> dict[str, Any]:
        host = urlsplit(url).hostname or "?"
        try:
            async with self._fetcher() as fetcher:
                got = await fetcher.fetch(url, method=method, headers={"Accept": "application/json", **(headers or {})},
                                          content=content)
        except FetchError as exc:
            raise OAuthFailed(f"the {what} at {host} could not be reached: {exc.message}") from None
        try:
            body = json_loads(got.content)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise OAuthFailed(f"the {what} at {host} answered HTTP {got.status} without a JSON object")
        if got.status != 200 or "error" in body:
            reason = str(body.get("error_description") or body.get("error") or f"HTTP {got.status}")[:200]
            raise OAuthFailed(f"the {what} refused: {reason}")
        return body

    async def endpoints(self, provider: Provider) -> Endpoints:
        options = self.services.options
        if provider.name != "oidc":
            base = str(self.services.settings.get(f"oauth_{provider.name}_base_url", "") or "")
            return Endpoints(_rebase(provider.authorize_url, base), _rebase(provider.token_url, base),
                             _rebase(provider.userinfo_url, base))
        well_known = str(options.value("oidc.well_known"))
        if not well_known:
            endpoints = Endpoints(str(options.value("oidc.authorization_endpoint")),
                                  str(options.value("oidc.token_endpoint")),
                                  str(options.value("oidc.user_info_endpoint")))
            if not endpoints.token:
                raise OAuthFailed("OIDC is not set up: set oidc.well_known or the endpoints")
            return endpoints
        return (await self._discover(well_known))[0]

    async def _discover(self, url: str) -> tuple[Endpoints, dict[str, Any]]:
        cached = self._discovered.get(url)
        if cached is not None and time.monotonic() - cached[0] < DISCOVERY_TTL:
            return cached[1], cached[2]
        doc = await self._json(url, what="OIDC discovery document")
        fields = {k: doc.get(k) for k in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint",
                                         "issuer", "jwks_uri")}
        if not all(isinstance(v, str) and v for k, v in fields.items() if k != "userinfo_endpoint"):
            raise OAuthFailed("the OIDC discovery document lacks its endpoints, issuer or jwks_uri")
        endpoints = Endpoints(str(fields["authorization_endpoint"]), str(fields["token_endpoint"]),
                              str(fields["userinfo_endpoint"] or ""), str(fields["issuer"]), str(fields["jwks_uri"]))
        jwks = await self._json(endpoints.jwks_uri, what="OIDC key set")
        self._discovered[url] = (time.monotonic(), endpoints, jwks)
        return endpoints, jwks

    async def exchange(self, provider: Provider, endpoints: Endpoints, code: str, redirect_uri: str,
                       verifier: str = "") -> dict[str, Any]:
        options = self.services.options
        client_id, secret = str(options.value(provider.client_id)), str(options.value(provider.client_secret))
        fields = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        if verifier:
            fields["code_verifier"] = verifier
        headers: dict[str, str] = {}
        if provider.credentials == "basic":
            pair = f"{client_id}:{secret}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        else:
            fields.update({"client_id": client_id, "client_secret": secret})
        if provider.credentials == "json":
            headers["Content-Type"] = "application/json"
            content = json_dumps(fields)
        else:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            content = urlencode(fields).encode()
        token = await self._json(endpoints.token, method="POST", headers=headers, content=content,
                                 what=f"{provider.title} token endpoint")
        if not isinstance(token.get("access_token"), str) or not token["access_token"]:
            raise OAuthFailed(f"{provider.title} gave no access token")
        return token

    async def profile(self, provider: Provider, endpoints: Endpoints, token: dict[str, Any],
                      nonce: str = "") -> Profile:
        claims: dict[str, Any] = {}
        if provider.name == "oidc" and endpoints.jwks_uri:
            if not isinstance(token.get("id_token"), str):
                raise OAuthFailed("the OIDC provider gave no id_token")
            claims = await self._id_token(token["id_token"], endpoints, nonce)
        body = claims
        if endpoints.userinfo:
            body = await self._json(endpoints.userinfo, headers={"Authorization": f"Bearer {token['access_token']}"},
                                    what=f"{provider.title} profile")
            if claims and body.get("sub") != claims.get("sub"):
                raise OAuthFailed("the OIDC profile is not the id_token's subject")
        found = provider.profile(body)
        if not found.subject or len(found.subject) > 255:
            raise OAuthFailed(f"{provider.title} gave no usable user id")
        return found

    async def _id_token(self, value: str, endpoints: Endpoints, nonce: str) -> dict[str, Any]:
        well_known = str(self.services.options.value("oidc.well_known"))
        _, jwks = await self._discover(well_known)
        client_id = str(self.services.options.value("oidc.client_id"))

        def verify() -> dict[str, Any]:
            token = jwt.decode(value, KeySet.import_key_set(jwks), algorithms=ID_TOKEN_ALGORITHMS)  # type: ignore[arg-type]
            jwt.JWTClaimsRegistry(iss={"essential": True, "value": endpoints.issuer},
                                  aud={"essential": True, "value": client_id},
                                  sub={"essential": True}, exp={"essential": True}).validate(token.claims)
            return dict(token.claims)

        try:
            claims = await asyncio.to_thread(verify)  # signature checks off the event loop
        except (JoseError, ValueError, TypeError) as exc:
            raise OAuthFailed(f"the OIDC id_token did not verify ({type(exc).__name__})") from None
        if nonce and claims.get("nonce") != nonce:
            raise OAuthFailed("the OIDC id_token's nonce is not this login's")
        return claims
