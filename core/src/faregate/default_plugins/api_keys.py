"""API key ("token") authentication for the relay, from memory (the snapshot, no
database round trip), as new-api's TokenAuth: the key where the request's format
carries it (else ``Authorization: Bearer``), an optional ``sk-`` prefix and, for
administrators, a ``-<channel id>`` suffix pinning a channel; then the key's status,
expiry and IP allow list, the user's status and the group. A present key it does not
know or may not use is refused (401/403), not passed on; registered ``trylast``, it
runs after the authenticators plugins add."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl

if TYPE_CHECKING:
    from faregate.contracts import Authenticator
    from faregate.services import Services


@hookimpl(trylast=True)
def register_authenticators(register: Callable[[Authenticator], None], services: Services) -> None:
    from faregate.default_plugins.authenticators import ApiKeyAuthenticator

    register(ApiKeyAuthenticator(services))
