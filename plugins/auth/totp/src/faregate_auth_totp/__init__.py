"""Faregate plugin: two-factor authentication with TOTP (authenticator apps) and backup
codes: new-api's ``/api/user/2fa/*`` routes, the ``2fa`` second factor that guards logins
(``POST /api/user/login/2fa``), secure verification (``POST /api/verify``) and the admin's
removal (``DELETE /api/user/{id}/2fa``).

The entry point in ``pyproject.toml`` names this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate.api import DbModels, SecondFactor, Services, hookimpl
from faregate_auth_totp.factor import TotpFactor
from faregate_auth_totp.models import APP
from faregate_auth_totp.routes import make_blueprint

__all__ = ["TABLES", "TotpFactor"]
__version__ = "0.1.0"

TABLES = DbModels(app=APP, models="faregate_auth_totp.models", migrations="faregate_auth_totp.migrations")

#: each gateway's factor, by its services (a process may build several gateways: tests do)
_factors: dict[int, TotpFactor] = {}


def _factor(services: Services) -> TotpFactor:
    factor = _factors.get(id(services))
    if factor is None or factor.accounts is not services.accounts:
        factor = _factors[id(services)] = TotpFactor(services.accounts)
    return factor


@hookimpl
def register_db_models(register: Callable[[DbModels], None]) -> None:
    register(TABLES)


@hookimpl
def register_second_factors(register: Callable[[SecondFactor], None], services: Services) -> None:
    register(_factor(services))


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    register(make_blueprint(services, _factor(services)))
