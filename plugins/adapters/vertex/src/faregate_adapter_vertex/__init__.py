"""Faregate plugin: the Google Vertex AI channel type (new-api type 41). The hook imports the
provider: loading the plugin (every command does) stays light."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import Provider, Services


@hookimpl
def register_providers(register: Callable[[Provider], None], services: Services) -> None:
    from faregate_adapter_vertex.provider import VertexProvider

    register(VertexProvider(services))
