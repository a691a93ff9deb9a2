"""Faregate plugin: passkeys (WebAuthn, py_webauthn): new-api's ``/api/user/passkey/*``
routes (register, status, delete, discoverable login, verify) and the ``passkey`` second
factor for ``POST /api/verify`` and the admin's reset.

The entry point in ``pyproject.toml`` names this module. Its hooks import what they register:
every command loads the plugins, most need only their settings (:mod:`.config`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import DbModels, OptionSpec, SecondFactor, Services, Setting

__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    from faregate_auth_passkeys.config import OPTIONS, SETTINGS

    for option in OPTIONS:
        register(option)
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_db_models(register: Callable[[DbModels], None]) -> None:
    from faregate_auth_passkeys.models import TABLES

    register(TABLES)


@hookimpl
def register_second_factors(register: Callable[[SecondFactor], None], services: Services) -> None:
    from faregate_auth_passkeys.factor import PasskeyFactor

    register(PasskeyFactor(services.accounts))


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    from faregate_auth_passkeys.routes import make_blueprint

    register(make_blueprint(services))
