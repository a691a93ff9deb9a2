"""new-api's passkey routes: register (begin / finish), status, delete, log in (begin /
finish, discoverable: the authenticator names the account) and verify (begin / finish, then
``POST /api/verify {"method": "passkey"}``). The admin's reset is the core's
``DELETE /api/user/{id}/reset_passkey``, through :class:`PasskeyFactor`."""

from __future__ import annotations

from quart import Blueprint, Response, session
from quart_schema import document_response, validate_request
from webauthn import generate_authentication_options, generate_registration_options
from webauthn.helpers import base64url_to_bytes
from webauthn.helpers.structs import (
    AuthenticatorAttachment,
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from faregate.api import (
    ROLE_USER,
    Done,
    Ok,
    Principal,
    Services,
    Shape,
    fail,
    guarded,
    ok,
    public,
    require,
    secure_verified,
)
from faregate_auth_passkeys import ceremony
from faregate_auth_passkeys.ceremony import AuthenticationBody, CeremonyFailed, RegistrationBody
from faregate_auth_passkeys.config import PasskeyConfigError, RelyingParty, relying_party
from faregate_auth_passkeys.models import PasskeyCredential


class Options(Shape):
    """The WebAuthn options for ``navigator.credentials.create()`` / ``.get()`` (JSON)."""

    options: dict[str, object]


class PasskeyStatus(Shape):
    enabled: bool
    last_used_at: int | None = None


def _descriptor(row: PasskeyCredential) -> PublicKeyCredentialDescriptor:
    return PublicKeyCredentialDescriptor(id=base64url_to_bytes(row.credential_id))


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("auth_passkeys", __name__)
    accounts = services.accounts

    def party() -> RelyingParty:
        return relying_party(services)

    @blueprint.errorhandler(PasskeyConfigError)
    async def _not_configured(exc: PasskeyConfigError) -> Response:
        return fail(str(exc))

    @blueprint.errorhandler(CeremonyFailed)
    async def _failed(exc: CeremonyFailed) -> Response:
        return fail(str(exc))

    @blueprint.post("/api/user/passkey/register/begin")
    @require(ROLE_USER)
    @secure_verified  # new-api's passkey_register scope: a stolen session alone cannot add a key
    @document_response(Ok[Options])
    async def register_begin(me: Principal) -> Response:
        rp = party()
        existing = await PasskeyCredential.get_or_none(user_id=me.user.id)
        selection = AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.REQUIRED,  # the login is discoverable: the key names the user
            user_verification=UserVerificationRequirement(rp.user_verification),
            authenticator_attachment=AuthenticatorAttachment(rp.attachment) if rp.attachment else None)
        options = generate_registration_options(
            rp_id=rp.id, rp_name=rp.name, user_name=me.user.username, user_id=str(me.user.id).encode(),
            authenticator_selection=selection, exclude_credentials=[_descriptor(existing)] if existing else None)
        return ok({"options": await ceremony.begin(accounts, session, ceremony.REGISTER, me.user.id, options)})

    @blueprint.post("/api/user/passkey/register/finish")
    @require(ROLE_USER)
    @validate_request(RegistrationBody)
    @document_response(Done)
    async def register_finish(data: RegistrationBody, me: Principal) -> Response:
        rp = party()
        challenge = await ceremony.take_challenge(accounts, session, ceremony.REGISTER, me.user.id)
        await ceremony.register(data, challenge, rp, me.user.id)
        await accounts.record(me.user.id, "registered a passkey")
        return ok(message="passkey registered")

    @blueprint.get("/api/user/passkey")
    @require(ROLE_USER)
    @document_response(Ok[PasskeyStatus])
    async def status(me: Principal) -> Response:
        row = await PasskeyCredential.get_or_none(user_id=me.user.id)
        if row is None:
            return ok({"enabled": False})
        return ok({"enabled": True, "last_used_at": row.last_used_at or None})

    @blueprint.delete("/api/user/passkey")
    @require(ROLE_USER)
    @secure_verified  # new-api's passkey_delete scope
    @document_response(Done)
    async def delete(me: Principal) -> Response:
        if not await PasskeyCredential.filter(user_id=me.user.id).delete():
            return fail("this account has no passkey")
        await accounts.record(me.user.id, "deleted the passkey")
        return ok(message="passkey removed")

    @blueprint.post("/api/user/passkey/login/begin")
    @public
    @guarded
    @document_response(Ok[Options])
    async def login_begin() -> Response:
        refused = await accounts.start_refused(ceremony.LOGIN,
                                               per_minute=int(services.settings.get("passkey_logins_per_ip", 20)))
        if refused is not None:  # anyone may start one, and each leaves a challenge row
            return refused
        rp = party()
        options = generate_authentication_options(rp_id=rp.id,
                                                  user_verification=UserVerificationRequirement(rp.user_verification))
        return ok({"options": await ceremony.begin(accounts, session, ceremony.LOGIN, 0, options)})

    @blueprint.post("/api/user/passkey/login/finish")
    @public
    @guarded
    @validate_request(AuthenticationBody)
    async def login_finish(data: AuthenticationBody) -> Response:
        """A passkey is a second factor on its own: no ``require_2fa`` step follows."""
        rp = party()
        challenge = await ceremony.take_challenge(accounts, session, ceremony.LOGIN)
        row = await PasskeyCredential.get_or_none(credential_id=data.id.rstrip("="))
        if row is None:
            return fail("this passkey is not registered here")
        handle = data.response.userHandle
        if handle and base64url_to_bytes(handle) != str(row.user_id).encode():
            return fail("the passkey's user handle does not match its account")
        await ceremony.authenticate(data, challenge, rp, row)
        return await accounts.log_in(row.user_id, "passkey", second_factor_done=True)

    @blueprint.post("/api/user/passkey/verify/begin")
    @require(ROLE_USER)
    @document_response(Ok[Options])
    async def verify_begin(me: Principal) -> Response:
        rp = party()
        row = await PasskeyCredential.get_or_none(user_id=me.user.id)
        if row is None:
            return fail("this account has no passkey")
        options = generate_authentication_options(rp_id=rp.id, allow_credentials=[_descriptor(row)],
                                                  user_verification=UserVerificationRequirement(rp.user_verification))
        return ok({"options": await ceremony.begin(accounts, session, ceremony.VERIFY, me.user.id, options)})

    @blueprint.post("/api/user/passkey/verify/finish")
    @require(ROLE_USER)
    @validate_request(AuthenticationBody)
    @document_response(Done)
    async def verify_finish(data: AuthenticationBody, me: Principal) -> Response:
        """Then ``POST /api/verify {"method": "passkey"}`` (within five minutes) opens the
        secure-verification window, as in new-api."""
        rp = party()
        challenge = await ceremony.take_challenge(accounts, session, ceremony.VERIFY, me.user.id)
        row = await PasskeyCredential.get_or_none(user_id=me.user.id)
        if row is None or row.credential_id != data.id.rstrip("="):
            return fail("this is not the account's passkey")
        await ceremony.authenticate(data, challenge, rp, row)
        session[ceremony.READY] = await accounts.issue_secret(ceremony.READY, ttl=ceremony.CHALLENGE_TTL,
                                                              user_id=me.user.id)
        return ok(message="passkey verified: POST /api/verify with method passkey to finish")

    return blueprint
