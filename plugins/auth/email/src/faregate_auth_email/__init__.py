"""Faregate plugin: email for accounts, over SMTP. Sign-up codes (``GET /api/verification``,
checked by the core's ``POST /api/user/register`` when ``EmailVerificationEnabled`` is on),
password reset by email (``GET /api/reset_password``, ``POST /api/user/reset``) and binding
an address (``POST /api/oauth/email/bind``), with new-api's paths and SMTP options.

The entry point in ``pyproject.toml`` names this module."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from faregate.api import Notifier, OptionSpec, Services, Setting, hookimpl
from faregate_auth_email.mailer import OPTIONS, EmailNotifier, Mailer, MailError
from faregate_auth_email.routes import make_blueprint

__all__ = ["OPTIONS", "SETTINGS", "EmailNotifier", "Mailer", "MailError"]
__version__ = "0.1.0"

#: the send limits (FAREGATE_EMAIL_…): mail costs, and a flood of it gets a domain blocklisted
SETTINGS = (
    Setting("email_sends_per_ip", 2, "Mails (sign-up codes, reset links) one client IP may ask for per "
            "email_send_window_seconds (new-api's EmailVerificationRateLimit: 2 per 30 s); 0: no limit.",
            Annotated[int, Field(ge=0, le=100_000)]),
    Setting("email_send_window_seconds", 30, "The window of email_sends_per_ip, in seconds.",
            Annotated[int, Field(ge=1, le=86_400)]),
    Setting("email_sends_per_address", 5, "Mails one address may be sent per 15 minutes, whoever asks; "
            "0: no limit.", Annotated[int, Field(ge=0, le=100_000)]),
)


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for option in OPTIONS:
        register(option)
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    register(make_blueprint(services))


@hookimpl
def register_notifiers(register: Callable[[Notifier], None], services: Services) -> None:
    """Users whose ``notify_type`` is ``email`` (new-api's default) get their notifications
    (quota warnings) by mail."""
    register(EmailNotifier(Mailer(services)))
