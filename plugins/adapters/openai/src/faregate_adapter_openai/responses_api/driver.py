"""Routes of kind ``responses``: the core's chat way (authenticate, read, summarize, admit,
relay), with the chat operation told that ``responses`` is a native endpoint. A request
that needs OpenAI's own Responses API (see :mod:`.summary`) is relayed to native channels
only, and when the model has none, refused with a 400 naming the field that needs it."""

from __future__ import annotations

from faregate.api import ChatDriver, ChatOperation, Exchange, GatewayError, Outcome, bad_request
from faregate_adapter_openai.responses_api.native import NATIVE, RESPONSES
from faregate_adapter_openai.responses_api.summary import ResponsesSummary

#: native channels as they are, every other chat channel converted
ANY_CHANNEL = ChatOperation(NATIVE)
#: native channels only (server-side state, built-in tools …)
NATIVE_ONLY = ChatOperation(NATIVE, convert=False)


class ResponsesDriver(ChatDriver):
    def __init__(self) -> None:
        super().__init__(RESPONSES, ANY_CHANNEL)

    def operation_for(self, ex: Exchange) -> ChatOperation:
        summary = ex.summary
        return NATIVE_ONLY if isinstance(summary, ResponsesSummary) and summary.native_only else self.operation

    async def handle(self, ex: Exchange) -> Outcome:
        try:
            return await super().handle(ex)
        except GatewayError as err:
            summary = ex.summary
            if err.code != "endpoint_not_supported" or not isinstance(summary, ResponsesSummary) \
                    or not summary.native_only:
                raise
            field = summary.native_only
            raise bad_request(f"{field}: needs OpenAI's own Responses API (the gateway keeps no responses, "
                              f"conversations or stored prompts and runs no built-in tools), and no channel of "
                              f"model `{ex.model}` serves it; send the whole conversation as input, with "
                              f"function tools only", param=field) from None
