"""Faregate plugin: OAuth 2.0 / OpenID Connect login, sign-up and account binding for
GitHub, Discord, Linux DO and any OIDC provider (discovery, JWKS-verified id_tokens), with
new-api's paths (``/api/oauth/state``, ``/api/oauth/<provider>``) and option names.

The entry point in ``pyproject.toml`` names this module. Its hooks import what they register:
every command loads the plugins, most need only their settings (:mod:`.providers`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import OptionSpec, Services, Setting

__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    from faregate_auth_oauth.providers import OPTIONS, SETTINGS

    for setting in SETTINGS:
        register(setting)
    for option in OPTIONS:
        register(option)


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    from faregate_auth_oauth.routes import make_blueprint

    register(make_blueprint(services))
