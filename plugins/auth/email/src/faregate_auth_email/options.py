"""The plugin's options (new-api's ``SMTP…``, edited in the console) and settings
(``FAREGATE_EMAIL_…``), apart from the code that reads them: ``faregate config show``
declares them without importing the mailer and its routes."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from faregate.api import OptionSpec, Setting, option_parsers

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("SMTPServer", "", "SMTP server host name (empty: no email is sent).", option_parsers.text(255)),
    OptionSpec("SMTPPort", "587", "SMTP server port (465 with SMTPSSLEnabled, 587 or 25 with STARTTLS).",
               option_parsers.integer(1, 65535)),
    OptionSpec("SMTPAccount", "", "SMTP login (empty: no authentication).", option_parsers.text(255)),
    OptionSpec("SMTPFrom", "", "Sender address (empty: SMTPAccount).", option_parsers.text(255)),
    OptionSpec("SMTPToken", "", "SMTP password or app token.", option_parsers.text(1024), secret=True),
    OptionSpec("SMTPSSLEnabled", "false", "Implicit TLS from the first byte (port 465); otherwise STARTTLS is "
               "used whenever the server offers it.", option_parsers.boolean),
)

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
