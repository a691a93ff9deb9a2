"""new-api's OAuth routes: ``GET /api/oauth/state`` (a state bound to the session, and an
invitation code), ``GET /api/oauth/<provider>?code&state`` (log in, sign up or, with a login
session, bind), plus ``GET /api/oauth/<provider>/authorize?return_to=/path``, which starts
the whole flow on the server (PKCE, an OIDC nonce, the exact redirect URI) and ends it with
a redirect to ``return_to``, a path on this site only; with ``callback=page`` the provider
sends the browser to new-api's frontend callback ``/oauth/<provider>`` instead, whose script
calls the callback and reads its answer (the user, the 2FA step, or why it failed).

A state is a one-time secret of the core as well as the session's: the callback needs both
(so a link with someone else's state, a CSRF login, fails), uses it up, and a state made
for one provider is refused by another. The login itself ends in the core
(``services.accounts.log_in``): a user with 2FA still has to pass it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from typing import Any
from urllib.parse import urlencode

from quart import Blueprint, Response, request, session
from quart_schema import document_response

from faregate.api import (
    BadInput,
    Done,
    Ok,
    Services,
    SignupError,
    fail,
    guarded,
    json_dumps_str,
    json_loads,
    ok,
    public,
)
from faregate_auth_oauth.client import OAuthClient, OAuthFailed
from faregate_auth_oauth.providers import PROVIDERS, Profile, Provider

STATE = "oauth_state"  # the purpose of the one-time secret and new-api's session key
STATE_TTL = 600
#: a local path: one leading slash, no scheme, no host, no backslash, no control character
_LOCAL_PATH = re.compile(r"/(?![/\\])[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]{0,511}")


def safe_return_to(value: str) -> str:
    if not _LOCAL_PATH.fullmatch(value) or "\\" in value:
        raise BadInput("return_to must be a path on this site, such as /console", status=400)
    return value


def _query(name: str, max_len: int) -> str:
    value = request.args.get(name, "")
    if len(value) > max_len or any(ord(c) < 32 for c in value):
        raise BadInput(f"{name} must be at most {max_len} printable characters", status=400)
    return value


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("auth_oauth", __name__)
    accounts = services.accounts
    client = OAuthClient(services)

    def provider_for(name: str) -> Provider:
        provider = PROVIDERS.get(name)
        if provider is None:
            raise BadInput(f"unknown OAuth provider {name[:32]!r}", status=400)
        return provider

    def redirect_uri(provider: Provider, *, api: bool) -> str:
        base = str(services.options.value("ServerAddress")).rstrip("/")
        if not base:
            raise BadInput("OAuth needs ServerAddress (the site's public address) to be set")
        return f"{base}/api/oauth/{provider.name}" if api else f"{base}/oauth/{provider.name}"

    async def start_refused() -> Response | None:
        """Each start writes a state row: limited per client IP, and capped overall."""
        return await accounts.start_refused(STATE, per_minute=int(services.settings.get("oauth_starts_per_ip", 20)))

    async def new_state(payload: dict[str, Any]) -> str:
        previous = str(session.get(STATE) or "")
        if previous:  # a session holds one state: the one it was given before is dropped
            await accounts.take_secret(STATE, previous)
        state = secrets.token_urlsafe(24)
        await accounts.issue_secret(STATE, ttl=STATE_TTL, secret=state, payload=json_dumps_str(payload))
        session[STATE] = state
        aff = _query("aff", 32)
        if aff:
            session["aff"] = aff
        return state

    @blueprint.get("/api/oauth/state")
    @public
    @guarded
    @document_response(Ok[str])
    async def state() -> Response:
        """A state for the provider's authorize URL (new-api's UI builds it), bound to this
        session; ``?aff=`` keeps an invitation code for a sign-up."""
        refused = await start_refused()
        if refused is not None:
            return refused
        return ok(await new_state({}))

    @blueprint.get("/api/oauth/<provider_name>/authorize")
    @public
    @guarded
    @document_response(Done)
    async def authorize(provider_name: str) -> Response:
        """302 to the provider. ``return_to`` (a path here) is where the callback sends the
        browser after a login or binding. ``callback=page``: the provider sends the browser
        to the page ``/oauth/<provider>`` (new-api's redirect URI), whose script calls the
        callback and gets its JSON answer; ``return_to`` is then not used."""
        provider = provider_for(provider_name)
        if not services.options.value(provider.enabled):
            return fail(f"{provider.title} login is not enabled by the administrator")
        callback_kind = _query("callback", 8) or "api"
        if callback_kind not in ("api", "page"):
            raise BadInput("callback must be api or page", status=400)
        via_page = callback_kind == "page"
        # a page's flow answers its script, which goes on by itself: no redirect at the end
        return_to = "" if via_page else safe_return_to(_query("return_to", 512) or "/")
        refused = await start_refused()
        if refused is not None:
            return refused
        verifier = secrets.token_urlsafe(48)
        nonce = secrets.token_urlsafe(16) if provider.name == "oidc" else ""
        uri = redirect_uri(provider, api=not via_page)
        try:
            endpoints = await client.endpoints(provider)
        except OAuthFailed as exc:
            return fail(str(exc))
        state = await new_state({"provider": provider.name, "verifier": verifier, "return_to": return_to,
                                 "nonce": nonce, "redirect_uri": uri})
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        params = {"response_type": "code", "client_id": str(services.options.value(provider.client_id)),
                  "redirect_uri": uri, "scope": provider.scope, "state": state, "code_challenge": challenge,
                  "code_challenge_method": "S256"}
        if nonce:
            params["nonce"] = nonce
        return _redirect(f"{endpoints.authorize}?{urlencode(params)}")

    @blueprint.get("/api/oauth/<provider_name>")
    @public
    @guarded
    async def callback(provider_name: str) -> Response:
        provider = provider_for(provider_name)
        given = _query("state", 128)
        expected = str(session.get(STATE) or "")
        # both: the state this browser's session was given, and a live one-time secret
        if not given or not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return fail("the OAuth state is invalid: start the login again", status=403)
        session.pop(STATE, None)
        found = await accounts.take_secret(STATE, given)
        if found is None:
            return fail("the OAuth state has expired or was used: start the login again", status=403)
        flow: dict[str, Any] = json_loads(found.payload or "{}")
        if flow.get("provider", provider.name) != provider.name:
            return fail("the OAuth state was made for another provider", status=403)
        if not services.options.value(provider.enabled):
            return fail(f"{provider.title} login is not enabled by the administrator")
        if _query("error", 256):
            return fail(_query("error_description", 256) or "the provider refused the login")
        code = _query("code", 2048)
        if not code:
            return fail("the provider sent no code", status=400)
        try:
            endpoints = await client.endpoints(provider)
            token = await client.exchange(provider, endpoints, code,
                                          str(flow.get("redirect_uri") or redirect_uri(provider, api=False)),
                                          str(flow.get("verifier") or ""))
            profile = await client.profile(provider, endpoints, token, str(flow.get("nonce") or ""))
        except OAuthFailed as exc:
            return fail(str(exc))
        if profile.trust_level is not None and profile.trust_level < int(
                services.options.value("LinuxDOMinimumTrustLevel")):
            return fail("your Linux DO trust level is too low for this site")
        answer = await finish(provider, profile)
        return_to = str(flow.get("return_to") or "")
        if return_to and answer.status_code == 200 and _completed(await answer.get_json()):
            return _redirect(safe_return_to(return_to))
        return answer

    async def finish(provider: Provider, profile: Profile) -> Response:
        me = accounts.session_user()
        owner = await accounts.bound_user(provider.name, profile.subject)
        if me is not None:  # a logged-in user binds the account
            if owner is not None:
                return fail(f"this {provider.title} account is already bound to a user")
            if not await accounts.bind(me.id, provider.name, profile.subject):
                return fail(f"you have a {provider.title} account bound already: unbind it first")
            await accounts.record(me.id, f"bound a {provider.title} account")
            return ok({"action": "bind"}, f"{provider.title} account bound")
        if owner is None:
            if not services.options.value("RegisterEnabled"):
                return fail("new registrations are closed by the administrator")
            aff = str(session.get("aff") or "")
            # as a password sign-up: per client IP, and per invitation code
            refused = await accounts.signup_refused()
            if refused is None:
                refused = await accounts.invitation_refused(aff)
            if refused is not None:
                return refused
            email = profile.email if profile.email and not await accounts.email_taken(profile.email) else ""
            try:
                owner = await accounts.create(username=profile.username, display_name=profile.display_name,
                                              email=email, inviter_code=aff, prefix=provider.prefix)
            except SignupError as exc:
                return fail(str(exc))
            if not await accounts.bind(owner.id, provider.name, profile.subject):
                return fail("the account could not be bound; try again")
        return await accounts.log_in(owner.id, f"oauth:{provider.name}")

    return blueprint


def _redirect(location: str) -> Response:
    return Response("", status=302, headers={"Location": location, "Cache-Control": "no-store"})


def _completed(body: Any) -> bool:
    """A finished login or binding (not a failure, not a pending second factor)."""
    if not isinstance(body, dict) or body.get("success") is not True:
        return False
    data = body.get("data")
    return not (isinstance(data, dict) and data.get("require_2fa"))
