"""The channel type ``azure`` (new-api's 3): Azure OpenAI, OpenAI's wire format at another
address. What differs, as new-api calls it:

* the base URL is the resource's endpoint (``https://NAME.openai.azure.com``): no default;
* a request goes to its deployment, ``{base}/openai/deployments/{deployment}/{path}?api-version=…``,
  the deployment being the upstream model name (after the channel's mapping; new-api removed
  dots from it only for channels made before 2025-05-10, Faregate never does: map the model
  to the deployment's name instead);
* ``api-version`` is the channel's ``other`` field, else :data:`DEFAULT_API_VERSION`;
* the key goes in the ``api-key`` header;
* the Responses API is not per deployment: ``{base}/openai/v1/responses?api-version=preview``
  (``/openai/responses`` with the channel's api-version on a ``cognitiveservices.azure.com``
  endpoint), the version overridden by the channel setting ``azure_responses_version``;
* realtime sessions speak the protocol of the client: the GA one (what the official SDKs'
  ``client.realtime`` speaks) at ``wss://…/openai/v1/realtime?model={deployment}`` (the v1 API:
  no api-version), the beta one at the preview path
  ``wss://…/openai/realtime?api-version=…&deployment=…``, which speaks nothing else (new-api
  dials the preview path for every client, so GA clients are answered in beta events there).
"""

from __future__ import annotations

import functools
import re
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from faregate.api import WEBSOCKET, GatewayError, UpstreamRequest, UpstreamTarget, join_url
from faregate_adapter_openai.catalog import OPENAI_MODELS
from faregate_adapter_openai.presets import path_segment
from faregate_adapter_openai.provider import OpenAICompatibleProvider, websocket_url

if TYPE_CHECKING:
    from collections.abc import Mapping

    from faregate_adapter_openai.testing.azure import FakeAzure

AZURE_TYPE = 3
#: new-api's default (its AZURE_DEFAULT_API_VERSION)
DEFAULT_API_VERSION = "2025-04-01-preview"
#: the Responses API's version when the channel names none (new-api's)
DEFAULT_RESPONSES_VERSION = "preview"
#: what an api-version looks like: ``2024-10-21``, ``2025-04-01-preview``, ``preview``, ``latest``
_VERSION = re.compile(r"^(\d{4}-\d{2}-\d{2}(-preview)?|preview|latest|v1)$")
#: the endpoint kinds an Azure resource serves (no moderations, no rerank)
AZURE_ENDPOINTS = frozenset({"chat", "completions", "embeddings", "images", "image_edits", "responses",
                             "responses_compact", "audio_transcriptions", "audio_translations", "audio_speech",
                             "realtime"})
_RESPONSES = {"responses": "/responses", "responses_compact": "/responses/compact"}


def version_problem(text: str, what: str) -> str | None:
    """Why ``text`` is not an Azure api-version (None when it is one or empty)."""
    text = text.strip()
    if text and not _VERSION.match(text):
        return f"{what} must be an Azure api-version such as {DEFAULT_API_VERSION} (got {text[:40]!r})"
    return None


@functools.lru_cache(maxsize=256)  # per request, of what rarely changes
def _version(text: str, default: str, what: str) -> str:
    problem = version_problem(text, what)
    if problem is not None:  # a channel saved before the check, or edited in the database
        raise GatewayError(500, f"azure channel: {problem}", code="channel:invalid_other")
    return text.strip() or default


class AzureOpenAIProvider(OpenAICompatibleProvider):
    name = "azure"
    channel_types = (AZURE_TYPE,)
    default_base_url = ""  # the resource's own endpoint: every channel gives it
    endpoints = AZURE_ENDPOINTS
    auth_header = "api-key"
    auth_prefix = ""
    models_path = None  # the deployments a key can call are not listed over the data plane
    model_catalog = MappingProxyType({AZURE_TYPE: OPENAI_MODELS})  # new-api offers OpenAI's for Azure

    def serves(self, endpoint: str, channel_type: int) -> bool:
        return endpoint in self.endpoints

    def endpoint_url(self, target: UpstreamTarget, kind: str) -> str:
        base = target.base_url.rstrip("/")
        if not base:
            raise GatewayError(500, "azure channel: give the resource's endpoint as the base URL",
                               code="channel:invalid_base_url")
        version = _version(target.other, DEFAULT_API_VERSION, "other (the api-version)")
        if kind in _RESPONSES:
            path = "/openai/v1"
            fallback = DEFAULT_RESPONSES_VERSION
            if "cognitiveservices.azure.com" in base:  # an AI Foundry resource: versioned as the rest
                path, fallback = "/openai", version
            setting = target.settings.get("azure_responses_version")
            responses = _version(setting if isinstance(setting, str) else "", fallback, "azure_responses_version")
            return f"{join_url(base, path + _RESPONSES[kind])}?api-version={responses}"
        deployment = path_segment(target.model)
        task = self.chat_path if kind == "chat" else self.json_paths[kind]
        return f"{join_url(base, f'/openai/deployments/{deployment}{task[3:]}')}?api-version={version}"

    def build_realtime(self, target: UpstreamTarget, beta: bool) -> UpstreamRequest:
        base = target.base_url.rstrip("/")
        if not base:
            raise GatewayError(500, "azure channel: give the resource's endpoint as the base URL",
                               code="channel:invalid_base_url")
        headers = self.auth_headers(target)
        deployment = path_segment(target.model)
        if not beta:
            url = websocket_url(join_url(base, "/openai/v1/realtime"))
            return UpstreamRequest(WEBSOCKET, f"{url}?model={deployment}", headers, b"")
        version = _version(target.other, DEFAULT_API_VERSION, "other (the api-version)")
        url = websocket_url(join_url(base, "/openai/realtime"))
        headers["OpenAI-Beta"] = "realtime=v1"
        return UpstreamRequest(WEBSOCKET, f"{url}?api-version={version}&deployment={deployment}", headers, b"")

    def check_key(self, key: str, other: str, settings: Mapping[str, Any]) -> str | None:
        """The key is Azure's as it is; ``other`` must be an api-version (or empty)."""
        setting = settings.get("azure_responses_version")
        return version_problem(other, "other (the api-version)") or (
            version_problem(setting, "azure_responses_version") if isinstance(setting, str) else None)

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeAzure:
        """The fake Azure OpenAI resource (:mod:`faregate_adapter_openai.testing.azure`)."""
        from faregate_adapter_openai.testing.azure import FakeAzure

        return FakeAzure(host, port, api_key=api_key, validate_requests=False)
