"""Faregate plugin: OAuth 2.0 / OpenID Connect login, sign-up and account binding for
GitHub, Discord, Linux DO and any OIDC provider (discovery, JWKS-verified id_tokens), with
new-api's paths (``/api/oauth/state``, ``/api/oauth/<provider>``) and option names.

The entry point in ``pyproject.toml`` names this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate.api import OptionSpec, Services, Setting, hookimpl
from faregate_auth_oauth.providers import OPTIONS, PROVIDERS, SETTINGS, Profile, Provider
from faregate_auth_oauth.routes import make_blueprint

__all__ = ["OPTIONS", "PROVIDERS", "Profile", "Provider"]
__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for setting in SETTINGS:
        register(setting)
    for option in OPTIONS:
        register(option)


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    register(make_blueprint(services))
