"""Runtime options (new-api's options table) as the snapshot holds them: the typed value of
every declared option, parsed once per change rather than per request.

Each option is declared by the layer that owns it, a tuple of :class:`OptionSpec` beside the
code that reads it (``BILLING_OPTIONS`` in :mod:`faregate.billing.options`, ``RELAY_OPTIONS``
in :mod:`faregate.exchange.options`, ``ACCOUNT_OPTIONS``, ``PAYMENT_OPTIONS``,
``SITE_OPTIONS``, ``LOG_RETENTION_OPTIONS``); the assembly layer collects them into the
gateway's :class:`OptionRegistry` (:mod:`faregate.default_plugins.options`) with those plugins
declare, and hands it down here. This layer knows no option by name: :meth:`Options.value`
reads any declared one, and an owner that reads its options on the hot path adds typed
attributes in a subclass (:class:`faregate.billing.options.BillingOptions`, extended by the
exchange's and the site's), which the assembly layer gives the snapshot to build."""

from __future__ import annotations

import logging
from typing import Any

from faregate.state.option_specs import OptionRegistry

log = logging.getLogger("faregate")


class Options:
    """Option values by name, parsed once per change. A stored value its option refuses
    is logged and replaced by the default: nothing unchecked reaches a request."""

    def __init__(self, raw: dict[str, str], registry: OptionRegistry) -> None:
        self.raw = raw
        self.values: dict[str, Any] = {}
        for key, spec in registry.specs.items():
            stored = raw.get(key)
            if stored is not None:
                try:
                    self.values[key] = spec.parse(stored)
                    continue
                except (ValueError, TypeError, OverflowError) as exc:
                    log.warning("option %s: the stored value is refused (%s); using the default", key, exc)
            self.values[key] = spec.parse(spec.default)

    def value(self, key: str) -> Any:
        """The typed value of a declared option (a plugin's too)."""
        return self.values[key]
