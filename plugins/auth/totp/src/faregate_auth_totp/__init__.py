"""Faregate plugin: two-factor authentication with TOTP (authenticator apps) and backup
codes: new-api's ``/api/user/2fa/*`` routes, the ``2fa`` second factor that guards logins
(``POST /api/user/login/2fa``), secure verification (``POST /api/verify``) and the admin's
removal (``DELETE /api/user/{id}/2fa``).

The entry point in ``pyproject.toml`` names this module. Its hooks import what they register:
every command loads the plugins, and most never build a gateway."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import DbModels, SecondFactor, Services
    from faregate_auth_totp.factor import TotpFactor

__version__ = "0.1.0"

#: each gateway's factor, by its services (a process may build several gateways: tests do)
_factors: dict[int, TotpFactor] = {}


def _factor(services: Services) -> TotpFactor:
    from faregate_auth_totp.factor import TotpFactor

    factor = _factors.get(id(services))
    if factor is None or factor.accounts is not services.accounts:
        factor = _factors[id(services)] = TotpFactor(services.accounts)
    return factor


@hookimpl
def register_db_models(register: Callable[[DbModels], None]) -> None:
    from faregate_auth_totp.models import TABLES

    register(TABLES)


@hookimpl
def register_second_factors(register: Callable[[SecondFactor], None], services: Services) -> None:
    register(_factor(services))


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    from faregate_auth_totp.routes import make_blueprint

    register(make_blueprint(services, _factor(services)))
