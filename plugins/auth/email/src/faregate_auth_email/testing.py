"""A local SMTP server for tests (aiosmtpd, on a free loopback port, in its own thread):
every message the gateway sends lands in ``messages``. ``configure(admin)`` points the
gateway's SMTP options at it."""

from __future__ import annotations

import asyncio
import re
import time
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from faregate.testing.harness import AdminClient, free_port


class _Collect:
    def __init__(self, server: LocalSMTP) -> None:
        self.server = server

    async def handle_DATA(self, smtp: SMTP, session: Session, envelope: Envelope) -> str:  # noqa: N802 (aiosmtpd's name)
        raw = envelope.content if isinstance(envelope.content, bytes) else str(envelope.content).encode()
        message = message_from_bytes(raw, policy=policy.default)
        assert isinstance(message, EmailMessage)
        self.server.messages.append(message)
        return "250 OK"


class LocalSMTP:
    def __init__(self) -> None:
        self.port = free_port()
        self.messages: list[EmailMessage] = []
        self._controller = Controller(_Collect(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> None:
        self._controller.start()

    def stop(self) -> None:
        self._controller.stop()

    async def configure(self, admin: AdminClient, **options: Any) -> None:
        await admin.set_option("SMTPServer", "127.0.0.1")
        await admin.set_option("SMTPPort", str(self.port))
        await admin.set_option("SMTPFrom", "gate@example.com")
        for key, value in options.items():
            await admin.set_option(key, value)

    @staticmethod
    def html(message: EmailMessage) -> str:
        part = message.get_body(("html",))
        assert part is not None
        return str(part.get_content())

    async def wait_for(self, to: str, timeout: float = 5.0, *, count: int = 1) -> EmailMessage:
        """The newest message to ``to``, once ``count`` of them have arrived (waiting)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [message for message in self.messages if to.lower() in str(message["To"]).lower()]
            if len(found) >= count:
                newest: EmailMessage = found[-1]
                return newest
            await asyncio.sleep(0.02)
        raise AssertionError(f"no mail to {to}")

    async def code_for(self, to: str) -> str:
        match = re.search(r"<strong>(\d{6})</strong>", self.html(await self.wait_for(to)))
        assert match is not None
        return match[1]
