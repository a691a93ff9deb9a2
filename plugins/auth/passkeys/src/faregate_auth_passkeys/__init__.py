"""Faregate plugin: passkeys (WebAuthn, py_webauthn): new-api's ``/api/user/passkey/*``
routes (register, status, delete, discoverable login, verify) and the ``passkey`` second
factor for ``POST /api/verify`` and the admin's reset.

The entry point in ``pyproject.toml`` names this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate.api import DbModels, OptionSpec, SecondFactor, Services, Setting, hookimpl
from faregate_auth_passkeys.config import OPTIONS, SETTINGS
from faregate_auth_passkeys.factor import PasskeyFactor
from faregate_auth_passkeys.models import APP
from faregate_auth_passkeys.routes import make_blueprint

__all__ = ["OPTIONS", "TABLES", "PasskeyFactor"]
__version__ = "0.1.0"

TABLES = DbModels(app=APP, models="faregate_auth_passkeys.models", migrations="faregate_auth_passkeys.migrations")


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for option in OPTIONS:
        register(option)
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_db_models(register: Callable[[DbModels], None]) -> None:
    register(TABLES)


@hookimpl
def register_second_factors(register: Callable[[SecondFactor], None], services: Services) -> None:
    register(PasskeyFactor(services.accounts))


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    register(make_blueprint(services))
