"""The contracts of who is calling: what an authenticator looks at and finds (the principal),
and a user's second factors."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from faregate.contracts.formats import InboundFormat
from faregate.principals import Principal


@dataclass(slots=True)
class AuthRequest:
    """What an authenticator may look at."""

    headers: Mapping[str, str]
    args: Mapping[str, str]
    remote_addr: str
    format: InboundFormat | None = None
    cookies: Mapping[str, str] = field(default_factory=dict)
    session: Any = None
    #: the key as the request's format carries it (None when it carries none)
    api_key: str | None = None


class Authenticator(Protocol):
    """``kind`` is ``api_key``, ``session`` or ``access_token``; ``authenticate(request)``
    returns a principal, or None to let the next authenticator look. An ``api_key``
    authenticator may also raise ``GatewayError`` to refuse a key it recognises
    (disabled, expired, wrong IP…). May be async."""

    kind: str

    def authenticate(self, request: AuthRequest) -> Principal | None | Awaitable[Principal | None]: ...


class SecondFactor(Protocol):
    """A second proof of who a user is (TOTP, passkeys…), named by ``method`` (``"2fa"``,
    ``"passkey"``: the names ``POST /api/verify`` takes). The core asks it whether a user
    has enrolled, to check a code before secrets are revealed, and to remove a user's
    enrolment when an admin resets it. Each method may be async. ``verify`` gets the
    login session so a ceremony begun on an earlier request (a WebAuthn challenge) can
    be finished.

    Optional attributes: ``at_login = True`` makes every login of an enrolled user wait
    for this factor (new-api's ``require_2fa`` step, ``POST /api/user/login/2fa``);
    ``needs_code = False`` lets ``POST /api/verify`` call ``verify`` with an empty code
    (the proof came through the factor's own routes, as a passkey's does)."""

    method: str

    def enrolled(self, user_id: int) -> bool | Awaitable[bool]: ...

    def verify(self, user_id: int, code: str, session: MutableMapping[str, Any]) -> bool | Awaitable[bool]: ...

    def reset(self, user_id: int) -> bool | Awaitable[bool]:
        """Remove the user's enrolment; True when there was one."""
        ...
