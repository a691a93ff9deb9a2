"""The default channel selector: weighted random among the candidates of one
priority level."""

from __future__ import annotations

import pluggy

from faregate.relay.routing import DefaultSelector

hookimpl = pluggy.HookimplMarker("faregate")


@hookimpl(trylast=True)
def register_channel_selectors(register):
    register(DefaultSelector())
