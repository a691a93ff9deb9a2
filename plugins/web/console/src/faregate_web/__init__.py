"""Faregate plugin: the web console and the playground.

The pages are static ES modules (Preact + htm, vendored) that call only the documented
management API (``/api/openapi.json``) and ``/pg/chat/completions``; this plugin serves
them and the page shell with a strict Content-Security-Policy. A headless deployment
leaves the distribution out (or lists ``faregate-web`` in ``FAREGATE_DISABLED_PLUGINS``).
``FAREGATE_FRONTEND_DIR`` serves an operator's own built front end (new-api's ``web/dist``)
in place of the console. The pages' routes are imported when they are registered: every command
loads the plugins, most need only their settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faregate.api import Setting, hookimpl

if TYPE_CHECKING:
    from faregate.api import OptionSpec, Services

__version__ = "0.1.0"

SETTINGS = (
    Setting("frontend_dir", "", "A directory holding a built single-page front end (new-api's web/dist) to "
            "serve at / in place of Faregate's console: its files as they are, index.html for every other "
            "page path, /api and the relay untouched. Empty: Faregate's console."),
)


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for setting in SETTINGS:
        register(setting)


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    directory = str(services.settings.get("frontend_dir") or "")
    if directory:
        from faregate_web.frontend import make_frontend_blueprint

        register(make_frontend_blueprint(directory))
    else:
        from faregate_web.site import make_blueprint

        register(make_blueprint(services))
