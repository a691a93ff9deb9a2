"""URL rules whose URL builders are compiled on first use.

Werkzeug compiles two builder functions (``_build`` and ``_build_unknown``, used by
``url_for`` and by redirects) with Python's ``compile()`` for every rule as it is added to
the map: for the gateway's ~275 rules that was about three quarters of building the app, paid by every
worker at start-up and by every test gateway, while the gateway builds URLs for a handful of
rules at most. Matching does not use them. :class:`LazyBuilderRule` compiles each builder on
its first call, with werkzeug's own code, so a built URL is the same as before."""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import Any

from quart.routing import QuartRule


class LazyBuilderRule(QuartRule):
    """Quart's rule with werkzeug's builders compiled when first called."""

    def _compile_builder(self, append_unknown: bool = True) -> Callable[..., tuple[str, str]]:
        slot = "_build_unknown" if append_unknown else "_build"

        def build_on_first_use(rule: LazyBuilderRule, **values: Any) -> tuple[str, str]:
            # werkzeug binds what this returns to the rule (``compile``); replace it with the
            # bound builder werkzeug would have made, then build as it would have
            builder = MethodType(QuartRule._compile_builder(rule, append_unknown), rule)
            setattr(rule, slot, builder)
            built: tuple[str, str] = builder(**values)
            return built

        return build_on_first_use
