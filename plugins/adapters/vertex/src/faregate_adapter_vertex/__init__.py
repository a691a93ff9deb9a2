"""Faregate plugin: the Google Vertex AI channel type (new-api type 41)."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import Provider, Services, hookimpl
from faregate_adapter_vertex.provider import VertexProvider

__all__ = ["VertexProvider"]


@hookimpl
def register_providers(register: Callable[[Provider], None], services: Services) -> None:
    register(VertexProvider(services))
