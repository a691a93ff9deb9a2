"""The management API under ``/api``, with new-api's contracts: the
``{success, message, data}`` envelope, ``p``/``page_size`` paging, the session cookie
plus ``New-Api-User`` header, or the access token."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quart import Quart

    from faregate.gateway import Gateway


def register_management(app: Quart, gateway: Gateway) -> None:
    from faregate.management import channels, logs, system, tokens, users

    for module in (system, users, channels, tokens, logs):
        app.register_blueprint(module.blueprint)
