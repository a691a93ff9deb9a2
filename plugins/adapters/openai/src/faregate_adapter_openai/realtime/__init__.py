"""OpenAI's Realtime API through the gateway: ``GET /v1/realtime?model=…`` as a WebSocket,
relayed to a channel's realtime WebSocket, billed response by response (see
docs/openai-endpoints.md#realtime).

* :mod:`.driver`: admission before the upgrade, dialing the channel (fail-over), settings;
* :mod:`.session`: the frames both ways, limits, how a session ends;
* :mod:`.billing`: reservations per response, settling ``response.done`` usage;
* :mod:`.protocol`: the parts of the protocol the gateway reads and writes.
"""

from __future__ import annotations

from faregate_adapter_openai.realtime.driver import PATH, REALTIME, RealtimeDriver, RealtimeProvider
from faregate_adapter_openai.settings import REALTIME_SETTINGS as SETTINGS

__all__ = ["PATH", "REALTIME", "SETTINGS", "RealtimeDriver", "RealtimeProvider"]
