"""Faregate plugin: Telegram login (the login widget) and account binding, with new-api's
paths (``/api/oauth/telegram/login``, ``/api/oauth/telegram/bind``) and options.

The entry point in ``pyproject.toml`` names this module. The routes are imported when they are
registered: every command loads the plugins, most need only their settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from faregate.api import OptionSpec, Setting, hookimpl, option_parsers

if TYPE_CHECKING:
    from faregate.api import Services

__version__ = "0.1.0"

#: made once: a new ``Field`` at every registration would make the settings a new set each time,
#: and each gateway would build its settings model afresh (see faregate.settings.resolve)
LOGIN_MAX_AGE = Setting("telegram_login_max_age", 3600, "Seconds a Telegram login widget's data stays valid.",
                        Annotated[int, Field(ge=60, le=86_400)])


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    register(LOGIN_MAX_AGE)
    register(OptionSpec("TelegramOAuthEnabled", "false", "Log in with Telegram.", option_parsers.boolean))
    register(OptionSpec("TelegramBotName", "", "The bot's username the login widget names.", option_parsers.text(64)))
    register(OptionSpec("TelegramBotToken", "", "The bot's token (checks the widget's signature).",
                        option_parsers.text(256), secret=True))


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    from faregate_auth_telegram.routes import make_blueprint

    register(make_blueprint(services))
