"""The channel type ``jina`` (new-api's 38): Jina AI's embeddings (OpenAI's wire format) and
reranker (``POST /v1/rerank``), nothing else."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from faregate.api import UpstreamRequest, UpstreamTarget
from faregate_adapter_openai.provider import OpenAICompatibleProvider

if TYPE_CHECKING:
    from faregate_adapter_openai.testing.jina import FakeJina

JINA_TYPE = 38
#: new-api's model list of the Jina channel, with Jina's current rerankers
JINA_MODELS = ("jina-embeddings-v3", "jina-embeddings-v4", "jina-clip-v2", "jina-reranker-v2-base-multilingual",
               "jina-reranker-m0", "jina-colbert-v2")


class JinaProvider(OpenAICompatibleProvider):
    name = "jina"
    channel_types = (JINA_TYPE,)
    default_base_url = "https://api.jina.ai"
    endpoints = frozenset({"embeddings", "rerank"})
    models_path = None  # Jina lists no models over its API
    model_catalog = MappingProxyType({JINA_TYPE: JINA_MODELS})

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        if endpoint == "embeddings" and "encoding_format" in body:
            # Jina names its encodings embedding_type; new-api drops OpenAI's field, so floats come back
            # (the OpenAI SDKs decode base64 only when they get a string)
            body = {k: v for k, v in body.items() if k != "encoding_format"}
            raw = b""
        return super().build_json(endpoint, body, raw, target)

    def fake_server(self, host: str, port: int, api_key: str | None) -> FakeJina:
        """The fake Jina server (:mod:`faregate_adapter_openai.testing.jina`)."""
        from faregate_adapter_openai.testing.jina import FakeJina

        return FakeJina(host, port, key=api_key, validate_requests=False)
