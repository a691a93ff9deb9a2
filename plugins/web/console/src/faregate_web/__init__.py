"""Faregate plugin: the web console and the playground.

The pages are static ES modules (Preact + htm, vendored) that call only the documented
management API (``/api/openapi.json``) and ``/pg/chat/completions``; this plugin serves
them and the page shell with a strict Content-Security-Policy. A headless deployment
leaves the distribution out (or lists ``faregate-web`` in ``FAREGATE_DISABLED_PLUGINS``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from faregate.api import Services, hookimpl
from faregate_web.site import make_blueprint

__version__ = "0.1.0"


@hookimpl
def register_routes(register: Callable[..., Any], services: Services) -> None:
    register(make_blueprint(services))
