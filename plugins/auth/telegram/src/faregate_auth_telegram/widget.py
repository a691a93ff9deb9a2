"""Checking the Telegram login widget's data (Telegram's documented scheme): the
``hash`` is HMAC-SHA256 over the other fields as sorted ``key=value`` lines, keyed with
SHA-256 of the bot token; compared in constant time; ``auth_date`` must be recent, so a
leaked callback URL stops working."""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping

MAX_FIELDS, MAX_VALUE = 16, 512


class WidgetRefused(Exception):
    """The data is not Telegram's, or too old; the message is safe to show."""


def check(fields: Mapping[str, str], bot_token: str, *, max_age: int, now: float | None = None) -> str:
    """The Telegram user id the data proves."""
    if not bot_token:
        raise WidgetRefused("Telegram login is not set up (no bot token)")
    if len(fields) > MAX_FIELDS or any(len(k) > 64 or len(v) > MAX_VALUE for k, v in fields.items()):
        raise WidgetRefused("the Telegram login data is malformed")
    given = fields.get("hash", "")
    lines = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()) if k != "hash")
    expected = hmac.new(hashlib.sha256(bot_token.encode()).digest(), lines.encode(), hashlib.sha256).hexdigest()
    if not given or not hmac.compare_digest(given.encode(), expected.encode()):
        raise WidgetRefused("the Telegram login data is not signed by the bot")
    try:
        age = (time.time() if now is None else now) - int(fields.get("auth_date", ""))
    except ValueError:
        raise WidgetRefused("the Telegram login data has no auth_date") from None
    if not -60 <= age <= max_age:
        raise WidgetRefused("the Telegram login data is too old: log in with Telegram again")
    user_id = fields.get("id", "")
    if not user_id.isdigit():
        raise WidgetRefused("the Telegram login data has no user id")
    return user_id


def sign(fields: Mapping[str, str], bot_token: str) -> dict[str, str]:
    """``fields`` with the hash Telegram would add (for tests and fakes)."""
    lines = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()))
    digest = hmac.new(hashlib.sha256(bot_token.encode()).digest(), lines.encode(), hashlib.sha256).hexdigest()
    return {**fields, "hash": digest}
