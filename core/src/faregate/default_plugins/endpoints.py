"""The core's endpoint kinds: ``chat`` (any chat-like format), ``playground`` (chat for
the logged-in user: new-api's ``/pg/chat/completions``), ``count_tokens``, and the model
lists ``models`` / ``model``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate import hookimpl

if TYPE_CHECKING:
    from faregate.exchange.policies import EndpointDriver


@hookimpl(trylast=True)
def register_endpoint_drivers(register: Callable[[EndpointDriver], None]) -> None:
    # imported here: loading the plugins (every command does) need not import the relay
    from faregate.exchange.chat import ChatDriver
    from faregate.exchange.count_tokens import CountTokensDriver
    from faregate.exchange.models import ModelDriver, ModelListDriver
    from faregate.exchange.playground import PlaygroundDriver

    register(ChatDriver())
    register(PlaygroundDriver())
    register(CountTokensDriver())
    register(ModelListDriver())
    register(ModelDriver())
