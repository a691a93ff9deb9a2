"""Management authentication as new-api: a login session (cookie) or the user's
access token, each with the ``New-Api-User`` header naming the same user."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl

if TYPE_CHECKING:
    from faregate.contracts import Authenticator
    from faregate.services import Services


@hookimpl(trylast=True)
def register_authenticators(register: Callable[[Authenticator], None], services: Services) -> None:
    from faregate.default_plugins.authenticators import AccessTokenAuthenticator, SessionAuthenticator

    register(SessionAuthenticator(services))
    register(AccessTokenAuthenticator(services))
