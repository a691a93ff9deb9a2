"""The channel type ``dify`` (new-api's 37): a Dify chat, agent or chatflow app, behind
every client format through the canonical model (``POST {base_url}/v1/chat-messages``,
``Authorization: Bearer <the app's key>``; the base URL defaults to new-api's
``https://api.dify.ai``, a self-hosted Dify's ``…/v1``-less root is the channel's to set).
The key names the app: the channel's model names are labels for it, sent nowhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from faregate.api import ChatRequest, ChatResponse, GatewayError, HttpJsonProvider, StreamParser, UpstreamTarget
from faregate_adapter_dify import errors, requests, responses, streams

if TYPE_CHECKING:
    from faregate_adapter_dify.testing.fake import FakeDify

DIFY_CHANNEL_TYPE = 37


class DifyProvider(HttpJsonProvider):
    name = "dify"
    channel_types = (DIFY_CHANNEL_TYPE,)
    native_format = None  # no client speaks Dify's format: every request is converted
    default_base_url = "https://api.dify.ai"
    chat_path = "/v1/chat-messages"
    models_path = None  # an app has no model list

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeDify:
        """The fake Dify server (:mod:`faregate_adapter_dify.testing`)."""
        from faregate_adapter_dify.testing.fake import FakeDify

        return FakeDify(host, port, key=api_key, validate_requests=False)

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        return requests.render_request(request, target.stream)

    def read_response(self, obj: Any) -> ChatResponse:
        return responses.parse_response(obj)

    def stream_parser(self) -> StreamParser:
        return streams.DifyStreamParser()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return errors.parse_error(status, body)
