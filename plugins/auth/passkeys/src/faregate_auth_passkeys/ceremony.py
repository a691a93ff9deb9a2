"""The WebAuthn ceremonies with py_webauthn: options out, the browser's credential JSON in
(declared, bounded bodies), verified off the event loop.

Each ``begin`` keeps its challenge as a one-time secret of the core (five minutes) and
names it in the session (replacing the one it named before); ``finish`` takes it, so a
challenge is answered at most once, and a replayed finish (or an old cookie) finds nothing.
A login's counter is stored with a compare-and-swap: an authenticator reporting a count at
or below the stored one (a cloned key) is refused, and of two racing uses of one count only
one passes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import MutableMapping
from typing import Annotated, Any, Literal

from pydantic import Field
from webauthn import options_to_json, verify_authentication_response, verify_registration_response
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import InvalidAuthenticationResponse, InvalidRegistrationResponse
from webauthn.helpers.structs import PublicKeyCredentialCreationOptions, PublicKeyCredentialRequestOptions

from faregate.api import Accounts, Body, json_loads
from faregate_auth_passkeys.config import RelyingParty
from faregate_auth_passkeys.models import PasskeyCredential

REGISTER, LOGIN, VERIFY, READY = "passkey_register", "passkey_login", "passkey_verify", "passkey_ready"
CHALLENGE_TTL = 300

B64 = Annotated[str, Field(min_length=1, max_length=2048, pattern=r"^[A-Za-z0-9_=-]+$")]
B64Large = Annotated[str, Field(min_length=1, max_length=65_536, pattern=r"^[A-Za-z0-9_=-]+$")]
Attachment = Literal["platform", "cross-platform"] | None


class AttestationResponse(Body):
    clientDataJSON: B64Large
    attestationObject: B64Large
    transports: Annotated[list[Annotated[str, Field(max_length=32)]], Field(max_length=10)] = []
    authenticatorData: B64Large | None = None
    publicKey: B64Large | None = None
    publicKeyAlgorithm: int | None = None


class RegistrationBody(Body):
    """What ``navigator.credentials.create()`` returned, as JSON (``PublicKeyCredential.toJSON``)."""

    id: B64
    rawId: B64
    type: Literal["public-key"]
    response: AttestationResponse
    authenticatorAttachment: Attachment = None
    clientExtensionResults: dict[str, Any] = {}


class AssertionResponse(Body):
    clientDataJSON: B64Large
    authenticatorData: B64Large
    signature: B64Large
    userHandle: B64 | None = None


class AuthenticationBody(Body):
    """What ``navigator.credentials.get()`` returned, as JSON."""

    id: B64
    rawId: B64
    type: Literal["public-key"]
    response: AssertionResponse
    authenticatorAttachment: Attachment = None
    clientExtensionResults: dict[str, Any] = {}


class CeremonyFailed(Exception):
    """The credential does not verify; the message is safe to show."""


async def begin(accounts: Accounts, session: MutableMapping[str, Any], purpose: str, user_id: int,
                options: PublicKeyCredentialCreationOptions | PublicKeyCredentialRequestOptions) -> Any:
    previous = str(session.get(purpose) or "")
    if previous:  # a session waits for one ceremony of a kind: the older challenge is dropped
        await accounts.take_secret(purpose, previous)
    token = await accounts.issue_secret(purpose, ttl=CHALLENGE_TTL, user_id=user_id,
                                        payload=bytes_to_base64url(options.challenge))
    session[purpose] = token
    return json_loads(options_to_json(options))


async def take_challenge(accounts: Accounts, session: MutableMapping[str, Any], purpose: str,
                         user_id: int = 0) -> bytes:
    token = str(session.pop(purpose, "") or "")
    found = await accounts.take_secret(purpose, token) if token else None
    if found is None or (user_id and found.user_id != user_id):
        raise CeremonyFailed("no passkey ceremony is waiting (or it expired, or was used): begin again")
    return base64url_to_bytes(found.payload)


async def register(body: RegistrationBody, challenge: bytes, rp: RelyingParty, user_id: int) -> PasskeyCredential:
    try:
        verified = await asyncio.to_thread(
            verify_registration_response, credential=body.model_dump(), expected_challenge=challenge,
            expected_rp_id=rp.id, expected_origin=rp.origins,
            require_user_verification=rp.user_verification == "required")
    except (InvalidRegistrationResponse, ValueError) as exc:
        raise CeremonyFailed(f"the passkey did not verify: {exc}") from None
    credential_id = bytes_to_base64url(verified.credential_id)
    if await PasskeyCredential.filter(credential_id=credential_id).exclude(user_id=user_id).exists():
        raise CeremonyFailed("this passkey is registered to another account")
    await PasskeyCredential.filter(user_id=user_id).delete()  # one passkey per user, as new-api
    return await PasskeyCredential.create(
        user_id=user_id, credential_id=credential_id, public_key=bytes_to_base64url(verified.credential_public_key),
        sign_count=verified.sign_count, aaguid=verified.aaguid[:36],
        transports=",".join(body.response.transports)[:255], backup_eligible=verified.credential_device_type ==
        "multi_device", backup_state=verified.credential_backed_up, created_at=int(time.time()))


async def authenticate(body: AuthenticationBody, challenge: bytes, rp: RelyingParty,
                       row: PasskeyCredential) -> None:
    """Verify an assertion by ``row``'s key and move its counter forward (once)."""
    try:
        verified = await asyncio.to_thread(
            verify_authentication_response, credential=body.model_dump(), expected_challenge=challenge,
            expected_rp_id=rp.id, expected_origin=rp.origins,
            credential_public_key=base64url_to_bytes(row.public_key), credential_current_sign_count=row.sign_count,
            require_user_verification=rp.user_verification == "required")
    except (InvalidAuthenticationResponse, ValueError) as exc:
        raise CeremonyFailed(f"the passkey did not verify: {exc}") from None
    moved = await PasskeyCredential.filter(id=row.id, sign_count=row.sign_count).update(
        sign_count=verified.new_sign_count, last_used_at=int(time.time()))
    if not moved:
        raise CeremonyFailed("the passkey was used by another request at the same time: try again")
