"""The channel type ``replicate`` (new-api's 56): image generation on Replicate, for the
gateway's ``POST /v1/images/generations`` (the OpenAI plugin's route and billing). A
generation is a prediction, ``POST {base_url}/v1/models/{owner}/{name}/predictions`` (a
model pinned to a version: ``POST {base_url}/v1/predictions``) with ``Prefer: wait``, so a
fast model answers at once; one still running is polled at ``GET
{base_url}/v1/predictions/{id}`` (the OpenAI plugin's job polling, bounded). The base URL
defaults to new-api's ``https://api.replicate.com`` and is the channel's to override.

The poll URL is made from the channel's base URL and the prediction's id (checked), never
taken from the answer's ``urls.get``: an upstream names no place the gateway then calls with
the channel's key. Replicate serves no chat: its channels are never chosen for it."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from faregate.api import (
    ChannelProbe,
    ChatRequest,
    ChatResponse,
    GatewayError,
    HttpJsonProvider,
    StreamEvent,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    json_dumps,
    probe_body,
)
from faregate_adapter_replicate import errors, predictions

if TYPE_CHECKING:
    from faregate_adapter_replicate.testing.fake import FakeReplicate

REPLICATE_CHANNEL_TYPE = 56
#: new-api's default model (its whole list), with Flux's other hosted models
REPLICATE_MODELS = ("black-forest-labs/flux-1.1-pro", "black-forest-labs/flux-schnell", "black-forest-labs/flux-dev",
                    "black-forest-labs/flux-1.1-pro-ultra")


class _NoChat(StreamParser):
    def feed(self, event: str | None, data: bytes) -> list[StreamEvent]:
        raise ValueError("a Replicate channel does not chat")


class ReplicateProvider(HttpJsonProvider):
    name = "replicate"
    channel_types = (REPLICATE_CHANNEL_TYPE,)
    endpoints = frozenset({"images"})
    model_catalog = MappingProxyType({REPLICATE_CHANNEL_TYPE: REPLICATE_MODELS})
    default_base_url = "https://api.replicate.com"
    models_path = None  # Replicate's model list is every public model: nothing a channel offers

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeReplicate:
        """The fake Replicate server (:mod:`faregate_adapter_replicate.testing`)."""
        from faregate_adapter_replicate.testing.fake import FakeReplicate

        return FakeReplicate(host, port, key=api_key, validate_requests=False)

    # ---- images (the OpenAI plugin's ImageJobProvider protocol) ------------------------------
    def build_generation(self, body: dict[str, Any], target: UpstreamTarget) -> UpstreamRequest:
        path, payload = predictions.create_path(target.model, body)
        headers = {**self.headers(target), "Prefer": "wait"}  # Replicate holds the answer up to 60 s
        return UpstreamRequest("POST", self.url(target, path), headers, json_dumps(payload))

    def read_generation(self, body: bytes, target: UpstreamTarget) -> list[str] | UpstreamRequest:
        state, value = predictions.read_prediction(body)
        if state == "done":
            assert isinstance(value, list)
            return value
        assert isinstance(value, str)
        return UpstreamRequest("GET", self.url(target, f"/v1/predictions/{value}"), self.auth_headers(target))

    def probe(self, endpoint: str, target: UpstreamTarget) -> ChannelProbe | None:
        """The channel test of image generation, the one kind these channels serve: one
        prediction of a small image, accepted once Replicate has made it (or is making it:
        a prediction still running is an accepted request, never polled by a test)."""
        if endpoint != "images":
            return None
        body = probe_body("images", target.model)
        return ChannelProbe(self.build_generation(body, target), _a_prediction, success_statuses=(200, 201))

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return errors.parse_error(status, body)

    # ---- no chat (the endpoint kinds keep chat requests away) ----------------------------------
    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        raise GatewayError(400, "a Replicate channel serves image generation only", code="endpoint_not_supported")

    def read_response(self, obj: Any) -> ChatResponse:
        raise ValueError("a Replicate channel does not chat")

    def stream_parser(self) -> StreamParser:
        return _NoChat()


def _a_prediction(body: bytes) -> object:
    """A prediction that succeeded with images or is still running; ``ValueError`` otherwise
    (a failed one raises its error)."""
    state, value = predictions.read_prediction(body)
    if state == "done" and not value:
        raise ValueError("a prediction without images")
    return value
