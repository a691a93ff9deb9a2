"""Faregate plugin: WeChat login and binding through a WeChat server (new-api's
``/api/oauth/wechat`` and ``/api/oauth/wechat/bind``, its ``WeChat*`` options).

The entry point in ``pyproject.toml`` names this module. The routes are imported when they are
registered: every command loads the plugins, most need only their settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from faregate.api import OptionSpec, Setting, hookimpl, option_parsers

if TYPE_CHECKING:
    from faregate.api import Services

__version__ = "0.1.0"


def _url(value: str) -> str:
    value = option_parsers.text(2048)(value).strip()
    if value and not value.startswith(("https://", "http://")):
        raise ValueError("expected an http(s) URL")
    return value


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    register(Setting("wechat_private_addresses", "allow", "Whether WeChatServerAddress may be a loopback or "
                     "private address (the WeChat server usually runs beside the gateway): allow or deny.",
                     Literal["allow", "deny"]))
    register(OptionSpec("WeChatAuthEnabled", "false", "Log in with WeChat.", option_parsers.boolean))
    register(OptionSpec("WeChatServerAddress", "", "The WeChat server's address (wechat-server).", _url))
    register(OptionSpec("WeChatServerToken", "", "The WeChat server's access token.", option_parsers.text(512),
                        secret=True))
    register(OptionSpec("WeChatAccountQRCodeImageURL", "", "The official account's QR code image, shown at login.",
                        option_parsers.text(2048)))


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    from faregate_auth_wechat.routes import make_blueprint

    register(make_blueprint(services))
