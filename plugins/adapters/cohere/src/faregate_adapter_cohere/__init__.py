"""Faregate plugin: the Cohere channel type (new-api's 34), chat and rerank."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import Provider, hookimpl
from faregate_adapter_cohere.provider import COHERE_CHANNEL_TYPE, CohereProvider

__all__ = ["COHERE_CHANNEL_TYPE", "CohereProvider"]


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(CohereProvider())
