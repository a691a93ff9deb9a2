"""Channel tests (:meth:`Provider.probe`, the admin's ``GET /api/channel/test/{id}``) of the
OpenAI family's JSON endpoints: a minimal body of each kind (a word in, the fewest tokens or
one image out), built by the provider's own ``build_json`` as the relay builds it (so a
preset's root and own paths, Azure's deployment URLs and Jina's addresses apply), and the list
an answer of the kind carries. A kind the channel's type does not serve has no test."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol

from faregate.api import ChannelProbe, UpstreamRequest, UpstreamTarget, json_loads, probe_body

#: kind → the list its answer carries (the body is the core's :func:`probe_body`)
PROBES: Mapping[str, str] = MappingProxyType({
    "responses": "output",
    "embeddings": "data",
    "images": "data",
    "rerank": "results",
    "moderations": "results",
    "completions": "choices",
})


class JsonBuilder(Protocol):
    def serves(self, endpoint: str, channel_type: int) -> bool: ...

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        ...


def carries(field: str) -> Callable[[bytes], object]:
    """A check that an answer is a JSON object with the list ``field``."""

    def check(body: bytes) -> object:
        answer = json_loads(body)
        if not isinstance(answer, dict) or not isinstance(answer.get(field), list):
            raise ValueError(f"an answer without {field}")
        return answer

    return check


def probe(provider: JsonBuilder, endpoint: str, target: UpstreamTarget) -> ChannelProbe | None:
    """The test of ``endpoint`` on ``target``'s channel, or None (no such kind here)."""
    field = PROBES.get(endpoint)
    if field is None or not provider.serves(endpoint, target.channel_type):
        return None
    return ChannelProbe(provider.build_json(endpoint, probe_body(endpoint, target.model), b"", target), carries(field))
