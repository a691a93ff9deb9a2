"""A local fake of each OAuth protocol family (aiohttp, on a loopback port), strict like
the real ones: the authorize step hands out a single-use code bound to the client, the
redirect URI and the PKCE challenge; the token endpoint checks the client's credentials in
that provider's style (JSON body, form, Basic auth), the code, the redirect URI and the
verifier; the profile endpoint wants the access token. The OIDC flavour serves a discovery
document, a JWKS and RS256 id_tokens (``forge_id_token`` signs one with a foreign key)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
from aiohttp import web
from joserfc import jwt
from joserfc.jwk import RSAKey

from faregate.testing.harness import AdminClient, GatewayServer, free_port
from faregate_auth_oauth.providers import PROVIDERS

PATHS = {"github": ("/login/oauth/authorize", "/login/oauth/access_token", "/user"),
         "discord": ("/oauth2/authorize", "/api/oauth2/token", "/api/users/@me"),
         "linuxdo": ("/oauth2/authorize", "/oauth2/token", "/api/user"),
         "oidc": ("/authorize", "/token", "/userinfo")}
CLIENT_ID, CLIENT_SECRET = "client-1", "client-secret-1"


@dataclass
class _Grant:
    redirect_uri: str
    challenge: str
    nonce: str


@dataclass
class FakeOAuthProvider:
    flavor: str
    user: dict[str, Any] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    #: every request the fake saw: (method, path, form or query)
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": "k1"})
        self.grants: dict[str, _Grant] = {}
        self.tokens: set[str] = set()
        self.forge_id_token = False
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeOAuthProvider:
        authorize, token, userinfo = PATHS[self.flavor]
        app = web.Application()
        app.router.add_get(authorize, self._authorize)
        app.router.add_post(token, self._token)
        app.router.add_get(userinfo, self._userinfo)
        app.router.add_get("/.well-known/openid-configuration", self._discovery)
        app.router.add_get("/jwks", self._jwks)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- the browser's step: approve and send back to the redirect URI ------------------------
    def approve(self, params: dict[str, str]) -> str:
        """The URL the provider redirects the browser to after the user approves."""
        assert params.get("client_id") == CLIENT_ID, "unknown client"
        code = secrets.token_urlsafe(16)
        self.grants[code] = _Grant(params.get("redirect_uri", ""), params.get("code_challenge", ""),
                                   params.get("nonce", ""))
        return f"{params.get('redirect_uri', '')}?{urlencode({'code': code, 'state': params.get('state', '')})}"

    async def _authorize(self, request: web.Request) -> web.Response:
        params = dict(request.query)
        self.seen.append(("GET", request.path, params))
        return web.Response(status=302, headers={"Location": self.approve(params)})

    async def _token(self, request: web.Request) -> web.Response:
        if self.flavor == "github":
            form = {k: str(v) for k, v in (await request.json()).items()}
        else:
            form = {k: str(v) for k, v in (await request.post()).items()}
        self.seen.append(("POST", request.path, form))
        if self.flavor == "linuxdo":
            expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
            authorized = request.headers.get("Authorization") == expected
        else:
            authorized = form.get("client_id") == CLIENT_ID and form.get("client_secret") == CLIENT_SECRET
        if not authorized:
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = self.grants.pop(form.get("code", ""), None)  # a code works once
        if grant is None or (self.flavor != "github" and form.get("redirect_uri") != grant.redirect_uri):
            return web.json_response({"error": "invalid_grant"}, status=400)
        if grant.challenge:
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != grant.challenge:
                return web.json_response({"error": "invalid_grant", "error_description": "PKCE"}, status=400)
        access = "at-" + secrets.token_urlsafe(16)
        self.tokens.add(access)
        body: dict[str, Any] = {"access_token": access, "token_type": "bearer"}
        if self.flavor == "oidc":
            body["id_token"] = self.id_token(grant.nonce)
        return web.json_response(body)

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {"iss": self.base_url, "aud": CLIENT_ID, "sub": str(self.user.get("sub", "")), "iat": now,
                  "exp": now + 300, **({"nonce": nonce} if nonce else {})}
        key = RSAKey.generate_key(2048, parameters={"kid": "k1"}) if self.forge_id_token else self.key
        return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)

    async def _userinfo(self, request: web.Request) -> web.Response:
        self.seen.append(("GET", request.path, {}))
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in self.tokens:
            return web.json_response({"message": "Bad credentials"}, status=401)
        return web.json_response(self.user)

    async def _discovery(self, request: web.Request) -> web.Response:
        authorize, token, userinfo = PATHS["oidc"]
        base = self.base_url
        return web.json_response({"issuer": base, "authorization_endpoint": base + authorize,
                                  "token_endpoint": base + token, "userinfo_endpoint": base + userinfo,
                                  "jwks_uri": base + "/jwks"})

    async def _jwks(self, request: web.Request) -> web.Response:
        return web.json_response({"keys": [self.key.as_dict(private=False)]})


SITE = "https://gate.example"
USERS = {"github": {"id": 4242, "login": "octo", "name": "Octo Cat", "email": "octo@example.com"},
         "discord": {"id": "80351110224678912", "username": "nelly", "global_name": "Nelly", "verified": True,
                     "email": "nelly@example.com"},
         "linuxdo": {"id": 7, "username": "tux", "name": "Tux", "trust_level": 2, "active": True},
         "oidc": {"sub": "oidc-subject-1", "preferred_username": "olive", "name": "Olive", "email": "olive@example.com",
                  "email_verified": True}}


@dataclass
class OAuthSite:
    gateway: GatewayServer
    admin: AdminClient
    fake: FakeOAuthProvider

    @property
    def name(self) -> str:
        return self.fake.flavor

    async def state(self, http: httpx.AsyncClient, **params: str) -> str:
        return str((await http.get("/api/oauth/state", params=params)).json()["data"])

    def approve(self, state: str, redirect_uri: str | None = None) -> dict[str, str]:
        """The browser at the provider: the user approves; the code and state come back."""
        location = self.fake.approve({"client_id": CLIENT_ID, "state": state,
                                      "redirect_uri": redirect_uri or f"{SITE}/oauth/{self.name}"})
        return dict(parse_qsl(urlsplit(location).query))

    async def login(self, http: httpx.AsyncClient) -> httpx.Response:
        back = self.approve(await self.state(http))
        return await http.get(f"/api/oauth/{self.name}", params=back)


async def configure(admin: AdminClient, fake: FakeOAuthProvider) -> None:
    provider = PROVIDERS[fake.flavor]
    await admin.set_option("ServerAddress", SITE)
    await admin.set_option(provider.enabled, True)
    await admin.set_option(provider.client_id, CLIENT_ID)
    await admin.set_option(provider.client_secret, CLIENT_SECRET)
    if fake.flavor == "oidc":
        await admin.set_option("oidc.well_known", fake.base_url + "/.well-known/openid-configuration")
