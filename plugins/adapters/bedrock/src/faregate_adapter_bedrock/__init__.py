"""Faregate plugin: the AWS Bedrock channel type (new-api type 33)."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import Provider, hookimpl
from faregate_adapter_bedrock.provider import BedrockProvider

__all__ = ["BedrockProvider"]


@hookimpl
def register_providers(register: Callable[[Provider], None]) -> None:
    register(BedrockProvider())
