"""Faregate plugin: top-ups paid with Creem checkouts, with new-api's paths and options
(``POST /api/user/creem/pay``, ``POST /api/creem/webhook``; the spec's ``hostedpay`` paths
answer the same). The core serves the routes, stores the orders and credits them once; this
plugin sells the configured products, starts the checkout and verifies Creem's signature.

The entry point in ``pyproject.toml`` names this module."""

from __future__ import annotations

from collections.abc import Callable

from faregate.api import OptionSpec, PaymentProvider, Services, Setting, hookimpl
from faregate_payment_creem.provider import OPTIONS, SETTINGS, CreemProvider, Product

__all__ = ["OPTIONS", "SETTINGS", "CreemProvider", "Product"]
__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    for setting in SETTINGS:
        register(setting)
    for option in OPTIONS:
        register(option)


@hookimpl
def register_payment_providers(register: Callable[[PaymentProvider], None], services: Services) -> None:
    register(CreemProvider(services))
