"""What accounts and sign-in see of the running gateway: a typed view, not the gateway.

:class:`faregate.gateway.Gateway` (the assembly layer) satisfies :class:`AccountsHost`
structurally, so the domain layer names this view and never imports the layers above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from faregate.contracts import SecondFactor
    from faregate.security.crypto import SecretBox
    from faregate.settings import Settings
    from faregate.state.changefeed import ChangeFeed
    from faregate.state.options import Options
    from faregate.state.snapshot import Snapshot


class AccountsHost(Protocol):
    """The parts of one worker's gateway that accounts and sign-in use."""

    @property
    def settings(self) -> Settings: ...
    @property
    def snapshot(self) -> Snapshot[Options]: ...
    @property
    def feed(self) -> ChangeFeed: ...
    @property
    def box(self) -> SecretBox: ...
    #: the installed second factors by method (a login ends through those guarding logins)
    @property
    def second_factors(self) -> Mapping[str, SecondFactor]: ...
