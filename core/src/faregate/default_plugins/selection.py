"""The default channel selector: weighted random among the candidates of one
priority level."""

from __future__ import annotations

from collections.abc import Callable

from faregate import hookimpl
from faregate.exchange.policies import ChannelSelector
from faregate.exchange.routing import DefaultSelector


@hookimpl(trylast=True)
def register_channel_selectors(register: Callable[[ChannelSelector], None]) -> None:
    register(DefaultSelector())
