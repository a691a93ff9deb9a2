"""Faregate plugin: the Replicate channel type (new-api's 56), image generation."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import Provider, hookimpl
from faregate_adapter_replicate.provider import REPLICATE_CHANNEL_TYPE, ReplicateProvider

__all__ = ["REPLICATE_CHANNEL_TYPE", "ReplicateProvider"]


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(ReplicateProvider())
