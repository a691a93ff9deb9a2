"""Notifying a user (new-api's ``NotifyUser``): a :class:`Notification` goes out the way the
user's settings say (``notify_type``: email, webhook, bark or gotify), through the
:class:`Notifier` registered for that kind. The core brings the webhook (new-api's
payload and ``X-Webhook-Signature``); plugins add the others (``register_notifiers``:
the email plugin sends mail). A user's URL is theirs to choose, so it is fetched only
through the guarded fetcher: loopback, private, link-local and cloud metadata addresses
are refused (private ones allowed by ``FAREGATE_NOTIFY_PRIVATE_ADDRESSES=allow``), and
checked when the settings are saved as far as that is possible without DNS."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from faregate import jsonutil
from faregate.net import AddressCategory, FetchError, GuardedFetcher
from faregate.net.errors import BlockedAddress
from faregate.net.resolve import check_literal
from faregate.net.urls import url_form_problem

#: new-api's placeholder in a notification's content
VALUE = "{{value}}"
#: what a notification's webhook may answer (read and dropped)
ANSWER_MAX = 64 * 1024
TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Notification:
    """new-api's ``dto.Notify``: ``content`` holds ``{{value}}`` placeholders, filled in order
    from ``values``."""

    type: str
    title: str
    content: str
    values: tuple[str | int | float, ...] = ()

    def text(self) -> str:
        out = self.content
        for value in self.values:
            out = out.replace(VALUE, str(value), 1)
        return out


@dataclass(frozen=True, slots=True)
class NotifyTarget:
    """Whom to tell: the user, the address to mail (their ``notification_email``, else their
    account's) and their stored settings (``webhook_url``, ``webhook_secret`` …)."""

    user_id: int
    username: str
    email: str
    settings: Mapping[str, Any]


class NotifyError(Exception):
    """The notification was not delivered; the message names no secret."""


class Notifier(Protocol):
    """Delivers notifications of one ``kind`` (a ``notify_type``: ``email``, ``webhook``,
    ``bark``, ``gotify``). ``send`` raises :class:`NotifyError` (or anything) on failure; it
    runs in a background task, never on a request's path."""

    kind: str

    async def send(self, target: NotifyTarget, note: Notification) -> None: ...


def stored_settings(text: str) -> dict[str, Any]:
    """A user's ``setting`` column as a dict (unreadable or not an object: empty)."""
    try:
        stored = jsonutil.loads(text) if text else {}
    except jsonutil.JSONDecodeError:
        return {}
    return stored if isinstance(stored, dict) else {}


def user_target(user_id: int, username: str, email: str, setting: str) -> tuple[NotifyTarget, str]:
    """Whom to tell and how (the ``notify_type``, email by default), from a user's row."""
    return target_of(user_id, username, email, stored_settings(setting))


def target_of(user_id: int, username: str, email: str, settings: dict[str, Any]) -> tuple[NotifyTarget, str]:
    """:func:`user_target` from the user's settings already read."""
    target = NotifyTarget(user_id=user_id, username=username,
                          email=str(settings.get("notification_email") or email or ""), settings=settings)
    return target, str(settings.get("notify_type") or "email")


def url_problem(url: str, allow: Collection[AddressCategory]) -> str | None:
    """Why a user's notification URL is refused, as the end of a sentence naming the field:
    not http(s), no host, credentials in it, or a host that is a refused address or name
    (checked without DNS; every fetch checks the addresses again). None when it is fine."""
    problem = url_form_problem(url, query=True)  # a webhook's URL may carry a query (a token)
    if problem is not None:
        return problem
    hostname = urlsplit(url).hostname
    assert hostname is not None  # the form check saw one
    try:
        check_literal(hostname, allow)
    except BlockedAddress as exc:
        return f"points at a refused address ({exc.category})"
    return None


def signature(secret: str, payload: bytes) -> str:
    """new-api's ``X-Webhook-Signature``: HMAC-SHA256 of the body, hex."""
    return hmac.new(secret.encode(), payload, hashlib.sha256).hexdigest()


class WebhookNotifier:
    """new-api's webhook: POST ``{type, title, content, values, timestamp}`` as JSON to the
    user's ``webhook_url``, signed with their ``webhook_secret`` (``X-Webhook-Signature``)
    when they set one; any 2xx is delivered."""

    kind = "webhook"

    def __init__(self, allow: Collection[AddressCategory] = (), *, timeout: float = TIMEOUT,
                 fetcher: GuardedFetcher | None = None) -> None:
        self.allow = frozenset(allow)
        self.timeout = timeout
        self.fetcher = fetcher  # injectable (tests); otherwise one per send

    async def send(self, target: NotifyTarget, note: Notification) -> None:
        url = str(target.settings.get("webhook_url") or "")
        problem = url_problem(url, self.allow) if url else "is not set"
        if problem is not None:
            raise NotifyError(f"webhook_url {problem}")
        payload = jsonutil.dumps({"type": note.type, "title": note.title, "content": note.text(),
                                  "values": list(note.values), "timestamp": int(time.time())})
        headers = {"Content-Type": "application/json"}
        secret = target.settings.get("webhook_secret")
        if isinstance(secret, str) and secret:
            headers["X-Webhook-Signature"] = signature(secret, payload)
        try:
            if self.fetcher is not None:
                got = await self.fetcher.fetch(url, method="POST", headers=headers, content=payload,
                                               max_bytes=ANSWER_MAX)
            else:
                async with GuardedFetcher(allow=self.allow, max_bytes=ANSWER_MAX, timeout=self.timeout,
                                          connect_timeout=min(self.timeout, 5.0)) as fetcher:
                    got = await fetcher.fetch(url, method="POST", headers=headers, content=payload)
        except FetchError as exc:
            raise NotifyError(f"the webhook could not be called: {exc.message}") from None
        if not 200 <= got.status < 300:
            raise NotifyError(f"the webhook answered HTTP {got.status}")
