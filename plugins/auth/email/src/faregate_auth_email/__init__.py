"""Faregate plugin: email for accounts, over SMTP. Sign-up codes (``GET /api/verification``,
checked by the core's ``POST /api/user/register`` when ``EmailVerificationEnabled`` is on),
password reset by email (``GET /api/reset_password``, ``POST /api/user/reset``) and binding
an address (``POST /api/oauth/email/bind``), with new-api's paths and SMTP options.

The entry point in ``pyproject.toml`` names this module. Its hooks import what they register:
every command loads the plugins, most need only their settings (:mod:`.options`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import Notifier, OptionSpec, Services, Setting

__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    from faregate_auth_email.options import OPTIONS, SETTINGS

    for option in OPTIONS:
        register(option)
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    from faregate_auth_email.routes import make_blueprint

    register(make_blueprint(services))


@hookimpl
def register_notifiers(register: Callable[[Notifier], None], services: Services) -> None:
    """Users whose ``notify_type`` is ``email`` (new-api's default) get their notifications
    (quota warnings) by mail."""
    from faregate_auth_email.mailer import EmailNotifier, Mailer

    register(EmailNotifier(Mailer(services)))
