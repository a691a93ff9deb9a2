"""A user's settings, new-api's ``users.setting`` column: one JSON object holding the
notification settings (``notify_type``, ``quota_warning_threshold``, ``webhook_url`` …),
the console's preferences (``sidebar_modules``, ``language``) and whatever an older version
or new-api stored there. Each route changes only its own keys; a change is applied with a
compare-and-set on the stored text, so two saves at once (the notification form and the
sidebar, from two workers) never drop each other's keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate import jsonutil
from faregate.db import models as m

#: shown only as whether one is set, never as they are
SECRET_FIELDS = ("webhook_secret", "gotify_token")
#: a compare-and-set lost this many times in a row means something rewrites the row in a loop
MAX_ATTEMPTS = 8


class SettingsBusy(Exception):
    """The settings changed under every attempt to change them."""


def stored_settings(text: str) -> dict[str, Any]:
    """The stored object; text that is not a JSON object reads as none."""
    try:
        stored = jsonutil.loads(text) if text else {}
    except jsonutil.JSONDecodeError:
        stored = {}
    return stored if isinstance(stored, dict) else {}


def settings_view(text: str) -> dict[str, Any]:
    """The stored settings, secrets shown only as set or not (true/false)."""
    return {k: (bool(v) if k in SECRET_FIELDS else v) for k, v in stored_settings(text).items()}


async def change_settings(user_id: int, change: Callable[[dict[str, Any]], dict[str, Any]]) -> str | None:
    """Store ``change(stored)`` as the user's settings, applied to what is stored at the
    moment of the write (re-read and re-applied when another write came in between): the
    text stored, None when there is no such user. ``change`` may raise to refuse."""
    for _ in range(MAX_ATTEMPTS):
        row = await m.User.get_or_none(id=user_id).only("id", "setting")
        if row is None:
            return None
        text = jsonutil.dumps_str(change(stored_settings(row.setting)))
        if text == row.setting or await m.User.filter(id=user_id, setting=row.setting).update(setting=text):
            return text
    raise SettingsBusy("the settings changed meanwhile; try again")
