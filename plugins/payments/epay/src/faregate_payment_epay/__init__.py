"""Faregate plugin: top-ups paid through an Epay (易支付) gateway, with new-api's paths and options
(``POST /api/user/pay``, ``POST /api/user/amount``, ``GET``/``POST /api/user/epay/notify``). The
core serves the routes, stores the orders and credits them once; this plugin prices, signs the
payment form and verifies the gateway's MD5-signed callbacks.

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
    from faregate_payment_epay.options import OPTIONS

    for option in OPTIONS:
        register(option)


@hookimpl
def register_payment_providers(register: Callable[[PaymentProvider], None], services: Services) -> None:
    from faregate_payment_epay.provider import EpayProvider

    register(EpayProvider(services))
