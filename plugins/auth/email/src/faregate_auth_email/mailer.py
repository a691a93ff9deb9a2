"""Sending mail over SMTP with aiosmtplib, configured by new-api's options (``SMTPServer``,
``SMTPPort``, ``SMTPAccount``, ``SMTPFrom``, ``SMTPToken``, ``SMTPSSLEnabled``), read at each
send so an admin's change applies at once. The password never reaches a log line or an
answer: a failure is reported by its kind only."""

from __future__ import annotations

import logging
from email.message import EmailMessage
from email.utils import formataddr

import aiosmtplib

from faregate.api import Notification, NotifyTarget, Services

log = logging.getLogger("faregate_auth_email")

#: seconds for the whole conversation with the SMTP server
TIMEOUT = 15.0


class MailError(Exception):
    """The mail was not sent; the message is safe to show (no secret in it)."""


class Mailer:
    def __init__(self, services: Services) -> None:
        self.services = services

    @property
    def configured(self) -> bool:
        return bool(self.services.options.value("SMTPServer"))

    async def send(self, to: str, subject: str, html: str) -> None:
        options = self.services.options
        server = str(options.value("SMTPServer"))
        if not server:
            raise MailError("email is not set up on this site (the administrator has not configured SMTP)")
        account, token = str(options.value("SMTPAccount")), str(options.value("SMTPToken"))
        sender = str(options.value("SMTPFrom")) or account
        message = EmailMessage()
        message["From"] = formataddr((str(options.system_name), sender))
        message["To"] = to
        message["Subject"] = subject
        message.set_content("This message is in HTML; open it in a mail program that shows HTML.")
        message.add_alternative(html, subtype="html")
        ssl = bool(options.value("SMTPSSLEnabled"))
        try:
            await aiosmtplib.send(message, hostname=server, port=int(options.value("SMTPPort")),
                                  username=account or None, password=token or None, use_tls=ssl,
                                  start_tls=False if ssl else None, timeout=TIMEOUT)
        except (aiosmtplib.SMTPException, OSError) as exc:
            # the exception's text may quote the server's answer to AUTH: only its kind is logged
            log.warning("sending mail through %s failed: %s", server, type(exc).__name__)
            raise MailError("the email could not be sent; try again later") from None


class EmailNotifier:
    """Notifications (quota warnings) by mail, to the user's ``notification_email`` or their
    account's address: the notification's title as the subject, its text as the body."""

    kind = "email"

    def __init__(self, mailer: Mailer) -> None:
        self.mailer = mailer

    async def send(self, target: NotifyTarget, note: Notification) -> None:
        if not target.email:
            raise MailError("the user has no email address")
        # the text is new-api's HTML (a top-up link); the values in it are the site's own figures
        await self.mailer.send(target.email, note.title, f"<p>{note.text()}</p>")
