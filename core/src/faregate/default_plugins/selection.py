"""The default channel selector: weighted random among the candidates of one
priority level."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl

if TYPE_CHECKING:
    from faregate.exchange.policies import ChannelSelector


@hookimpl(trylast=True)
def register_channel_selectors(register: Callable[[ChannelSelector], None]) -> None:
    from faregate.exchange.routing import DefaultSelector  # here: loading the plugins need not import it

    register(DefaultSelector())
