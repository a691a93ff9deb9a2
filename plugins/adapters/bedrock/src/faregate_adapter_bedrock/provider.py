"""The channel type ``aws`` (new-api channel type 33): Amazon Bedrock's runtime API.

Claude models are called through InvokeModel (``/model/{modelId}/invoke``,
``/invoke-with-response-stream``) with Anthropic's Messages body (``anthropic_version:
bedrock-2023-05-31``, the model in the URL): an Anthropic client's body is passed through,
other clients' converted by the Anthropic plugin's own code. Every other model goes
through the Converse API (``/converse``, ``/converse-stream``). Streamed answers come in
AWS event-stream framing. The key is new-api's (:mod:`.keys`): SigV4 with botocore's
signer, or a Bedrock API key as a bearer token. The base URL, when the channel sets one,
replaces ``https://bedrock-runtime.{region}.amazonaws.com`` (a proxy, a VPC endpoint, a
test's fake)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from faregate.api import (
    ChatRequest,
    ChatResponse,
    Framing,
    GatewayError,
    HttpJsonProvider,
    PassthroughStream,
    RequestSummary,
    StreamParser,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    join_url,
    json_dumps,
    json_loads,
    malformed_response,
)
from faregate_adapter_anthropic import requests as anthropic_requests
from faregate_adapter_anthropic import responses as anthropic_responses
from faregate_adapter_bedrock import converse_requests, converse_responses, errors, streams
from faregate_adapter_bedrock.catalog import BEDROCK_MODELS
from faregate_adapter_bedrock.keys import AwsKey, channel_key, key_problem
from faregate_adapter_bedrock.model_ids import bedrock_model_id, is_anthropic
from faregate_adapter_bedrock.names import (
    ANTHROPIC_FORMAT,
    ANTHROPIC_VERSION,
    BEDROCK_CHANNEL_TYPE,
    CONTROL_HOST,
    CONVERSE,
    CONVERSE_STREAM,
    INVOKE,
    INVOKE_STREAM,
    RUNTIME_HOST,
)
from faregate_adapter_bedrock.signing import auth_headers, wire_url

if TYPE_CHECKING:
    from faregate_adapter_bedrock.testing.fake import FakeBedrock

JSON = "application/json"


def _client_header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None and isinstance(headers, dict):  # plain dicts are case-sensitive
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value or None


def anthropic_body(body: dict[str, Any], target: UpstreamTarget) -> dict[str, Any]:
    """A Messages body as Bedrock takes it: no ``model`` (it is in the URL), no ``stream``
    (the path says it), ``anthropic_version`` in the body, and the client's
    ``anthropic-beta`` header as the body's ``anthropic_beta`` list."""
    out = {k: v for k, v in body.items() if k not in ("model", "stream")}
    out["anthropic_version"] = ANTHROPIC_VERSION
    beta = _client_header(target.client_headers, "anthropic-beta")
    if beta and "anthropic_beta" not in out:
        out["anthropic_beta"] = [b.strip() for b in beta.split(",") if b.strip()]
    return out


class BedrockProvider(HttpJsonProvider):
    name = "bedrock"
    channel_types = (BEDROCK_CHANNEL_TYPE,)
    model_catalog = MappingProxyType({BEDROCK_CHANNEL_TYPE: BEDROCK_MODELS})
    default_base_url = ""  # by region: RUNTIME_HOST
    stream_framing = Framing.AWS_EVENT_STREAM
    models_path = "/foundation-models"

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeBedrock:
        """The fake Bedrock (:mod:`faregate_adapter_bedrock.testing`), taking ``api_key`` as
        its Bedrock API key (a channel's key: ``{api_key}|us-east-1``)."""
        from faregate_adapter_bedrock.testing.fake import FakeBedrock

        return FakeBedrock(host, port, api_key=api_key, validate_requests=False)

    def native_format_for(self, target: UpstreamTarget) -> str | None:
        return ANTHROPIC_FORMAT if is_anthropic(target.model) else None

    def check_key(self, key: str, other: str, settings: Mapping[str, Any]) -> str | None:
        return key_problem(key, other, settings)

    # ---- requests -----------------------------------------------------------------------
    def _key(self, target: UpstreamTarget) -> AwsKey:
        return channel_key(target.key, target.other, target.settings)

    def _call(self, target: UpstreamTarget, key: AwsKey, action: str, body: dict[str, Any]) -> UpstreamRequest:
        model_id = bedrock_model_id(target.model, key.region)
        base = target.base_url or RUNTIME_HOST.format(region=key.region)
        url = wire_url(join_url(base, f"/model/{quote(model_id, safe='')}/{action}"))
        payload = json_dumps(body)
        headers = {"Content-Type": JSON}
        if action == INVOKE:
            headers["Accept"] = JSON
        elif action == INVOKE_STREAM:
            headers["X-Amzn-Bedrock-Accept"] = JSON
        return UpstreamRequest("POST", url, auth_headers("POST", url, headers, payload, key), payload)

    def render_request(self, request: ChatRequest, target: UpstreamTarget) -> dict[str, Any]:
        if not is_anthropic(target.model):
            return converse_requests.render_request(request)
        default_max = target.settings.get("default_max_tokens") if target.settings else None
        if not isinstance(default_max, int) or isinstance(default_max, bool) or default_max < 1:
            default_max = anthropic_requests.DEFAULT_MAX_TOKENS
        return anthropic_body(anthropic_requests.render_request(request, target.model, default_max), target)

    def build_request(self, request: ChatRequest, target: UpstreamTarget) -> UpstreamRequest:
        key = self._key(target)
        if is_anthropic(target.model):
            action = INVOKE_STREAM if target.stream else INVOKE
        else:
            action = CONVERSE_STREAM if target.stream else CONVERSE
        return self._call(target, key, action, self.render_request(request, target))

    def build_passthrough(self, body: dict[str, Any], raw: bytes, target: UpstreamTarget,
                          summary: RequestSummary) -> UpstreamRequest:
        """An Anthropic client's Messages body for a Claude model, as Bedrock takes it."""
        key = self._key(target)
        return self._call(target, key, INVOKE_STREAM if target.stream else INVOKE, anthropic_body(body, target))

    # ---- answers ------------------------------------------------------------------------
    def read_response(self, obj: Any) -> ChatResponse:
        if converse_responses.is_converse_response(obj):
            return converse_responses.parse_response(obj)
        return anthropic_responses.parse_response(obj)

    def read_usage(self, obj: Any) -> Usage | None:
        """A Claude answer passed through: Anthropic's usage (cache reads and writes included)."""
        if not isinstance(obj, dict) or not isinstance(obj.get("content"), list):
            raise ValueError("not a Messages response")
        return anthropic_responses.parse_usage(obj.get("usage"))

    def stream_parser(self) -> StreamParser:
        return streams.BedrockStreamParser()

    def passthrough_stream(self, summary: RequestSummary) -> PassthroughStream:
        return streams.ChunkPassthrough()

    def parse_error(self, status: int, body: bytes) -> GatewayError:
        return errors.parse_error(status, body)

    # ---- model lists --------------------------------------------------------------------
    def models_request(self, target: UpstreamTarget) -> UpstreamRequest | None:
        """ListFoundationModels, on the control plane's host (``bedrock.{region}``), not
        the runtime's; a channel's base URL stands for both (a proxy or fake serving
        ``/foundation-models`` too)."""
        key = self._key(target)
        base = target.base_url or CONTROL_HOST.format(region=key.region)
        url = wire_url(join_url(base, self.models_path or "") + "?byOutputModality=TEXT")
        return UpstreamRequest("GET", url, auth_headers("GET", url, {"Accept": JSON}, None, key))

    def parse_models(self, body: bytes) -> list[str]:
        """``{"modelSummaries": [{"modelId": …}, …]}``."""
        try:
            found = json_loads(body).get("modelSummaries")
        except (ValueError, AttributeError):
            raise malformed_response() from None
        if not isinstance(found, list):
            raise malformed_response()
        return [str(m["modelId"]) for m in found if isinstance(m, dict) and isinstance(m.get("modelId"), str)]
