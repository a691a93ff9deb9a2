"""Faregate plugin: email for accounts, over SMTP. Sign-up codes (``GET /api/verification``,
checked by the core's ``POST /api/user/register`` when ``EmailVerificationEnabled`` is on),
password reset by email (``GET /api/reset_password``, ``POST /api/user/reset``) and binding
an address (``POST /api/oauth/email/bind``), with new-api's paths and SMTP options.

The entry point in ``pyproject.toml`` names this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate.api import Notifier, OptionSpec, Services, Setting, hookimpl
from faregate_auth_email.mailer import OPTIONS, EmailNotifier, Mailer, MailError
from faregate_auth_email.routes import make_blueprint

__all__ = ["OPTIONS", "EmailNotifier", "Mailer", "MailError"]
__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for option in OPTIONS:
        register(option)


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    register(make_blueprint(services))


@hookimpl
def register_notifiers(register: Callable[[Notifier], None], services: Services) -> None:
    """Users whose ``notify_type`` is ``email`` (new-api's default) get their notifications
    (quota warnings) by mail."""
    register(EmailNotifier(Mailer(services)))
