"""Faregate plugin: top-ups paid with Stripe Checkout, with new-api's paths and options
(``POST /api/user/stripe/pay``, ``/api/user/stripe/amount``, ``POST /api/stripe/webhook``; the
spec's ``cardpay`` paths answer the same). The core serves the routes, stores the orders and
credits them once; this plugin prices, starts the Checkout Session and verifies Stripe's
signature.

The entry point in ``pyproject.toml`` names this module. Its hooks import what they register:
every command loads the plugins, most need only their options (:mod:`.options`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import hookimpl

if TYPE_CHECKING:
    from faregate.api import OptionSpec, PaymentProvider, Services, Setting

__version__ = "0.1.0"


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    from faregate_payment_stripe.options import OPTIONS, SETTINGS

    for setting in SETTINGS:
        register(setting)
    for option in OPTIONS:
        register(option)


@hookimpl
def register_payment_providers(register: Callable[[PaymentProvider], None], services: Services) -> None:
    from faregate_payment_stripe.provider import StripeProvider

    register(StripeProvider(services))
