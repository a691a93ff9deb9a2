"""The ``gemini_generate`` endpoint kind: ``generateContent`` and ``streamGenerateContent``,
relayed as the core's chat kind does (passed through to Gemini channels, converted for
every other chat channel). A stream the client asked for without ``?alt=sse`` is one
JSON array, so its answer is ``application/json`` rather than an event stream."""

from __future__ import annotations

from faregate.api import ChatDriver, ChatOperation, Exchange, GatewayError, Outcome, Provider, UpstreamResponse
from faregate_adapter_gemini.names import GENERATE_KIND, UNSERVED_KIND
from faregate_adapter_gemini.summary import GeminiSummary

JSON_ARRAY_TYPE = "application/json; charset=UTF-8"


class GenerateOperation(ChatOperation):
    async def finish(self, ex: Exchange, provider: Provider, resp: UpstreamResponse, passthrough: bool) -> Outcome:
        outcome = await super().finish(ex, provider, resp, passthrough)
        summary = ex.summary
        if outcome.stream is not None and isinstance(summary, GeminiSummary) and not summary.sse:
            outcome.content_type = JSON_ARRAY_TYPE
        return outcome


class GenerateDriver(ChatDriver):
    def __init__(self) -> None:
        super().__init__(GENERATE_KIND, GenerateOperation())


class UnservedDriver:
    """An action of the native API the gateway does not relay: 501 in Gemini's shape (after
    the key is checked, as new-api answers the paths it does not implement)."""

    kind = UNSERVED_KIND

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        action = ex.request.path_params.get("action", "")
        raise GatewayError(501, f"the gateway does not serve the {action[:64]!r} action", type="new_api_error",
                           code="api_not_implemented")
