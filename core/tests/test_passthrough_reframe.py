"""A pass-through reader may send an event re-framed (its ``feed`` returns the bytes to
send): the client gets those bytes in place of the upstream's, and held events (``False``)
and raw ones (``True``) work as before; a provider's native format is decided per call
(``Provider.native_format_for``, by default its ``native_format``)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from faregate.contracts import PassthroughStream, Provider, UpstreamTarget
from faregate.exchange.streaming import StreamReader
from faregate.framing import Framing


class Reframe(PassthroughStream):
    def feed(self, event: str | None, data: bytes) -> bool | bytes:
        if data == b"hold":
            return False
        if data == b"raw":
            return True
        return b"<" + data + b">"


def test_an_event_may_go_reframed_raw_or_not_at_all() -> None:
    reader = StreamReader(Reframe(), None, Framing.JSON_LINES)
    assert reader.feed(b"raw\nhold\nwrapped\n", None) == [b"raw\n", b"<wrapped>"]


def test_the_native_format_is_the_providers_unless_it_decides_per_call() -> None:
    target = UpstreamTarget(base_url="", key="k", model="m", stream=False, channel_type=1)
    provider: Any = SimpleNamespace(native_format="openai.chat")
    assert Provider.native_format_for(provider, target) == "openai.chat"
