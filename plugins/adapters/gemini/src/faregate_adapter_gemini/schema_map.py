"""Gemini's ``Schema`` (a subset of OpenAPI 3.0's schema object, types in upper case:
``OBJECT``, ``STRING`` …) as JSON Schema, for tool parameters and response schemas that
go to another vendor. The other way needs no conversion: the gateway sends JSON Schema
to Gemini in ``parametersJsonSchema`` / ``responseJsonSchema``, which take it as it is."""

from __future__ import annotations

from typing import Any

from faregate.api import bad_request

#: how deep a schema may nest (tool schemas are shallow; a deeper one is refused, not recursed into)
MAX_DEPTH = 32
_PLAIN = ("format", "title", "description", "pattern", "minimum", "maximum", "default")
_COUNTS = ("minItems", "maxItems", "minLength", "maxLength", "minProperties", "maxProperties")


def _type(value: Any, where: str) -> str | None:
    if not isinstance(value, str):
        raise bad_request(f"{where}.type must be a string", param=f"{where}.type")
    kind = value.lower()
    if kind == "type_unspecified":
        return None
    if kind not in ("string", "number", "integer", "boolean", "array", "object", "null"):
        raise bad_request(f"{where}.type {value!r} is not a schema type", param=f"{where}.type")
    return kind


def _count(value: Any, where: str) -> int:
    """Gemini carries counts as int64, which JSON may give as a string."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise bad_request(f"{where} must be a non-negative integer", param=where)


def to_json_schema(schema: Any, where: str = "schema", depth: int = 0) -> dict[str, Any]:
    """A Gemini ``Schema`` as JSON Schema (``nullable`` as a union with ``null``;
    ``propertyOrdering`` and ``example``, which JSON Schema has no use for, left out)."""
    if not isinstance(schema, dict):
        raise bad_request(f"{where} must be an object", param=where)
    if depth > MAX_DEPTH:
        raise bad_request(f"{where} nests deeper than {MAX_DEPTH} levels", param=where)
    out: dict[str, Any] = {}
    kind = _type(schema["type"], where) if schema.get("type") is not None else None
    if kind is not None:
        out["type"] = [kind, "null"] if schema.get("nullable") is True and kind != "null" else kind
    for key in _PLAIN:
        if schema.get(key) is not None:
            out[key] = schema[key]
    for key in _COUNTS:
        if schema.get(key) is not None:
            out[key] = _count(schema[key], f"{where}.{key}")
    enum = schema.get("enum")
    if enum is not None:
        if not isinstance(enum, list):
            raise bad_request(f"{where}.enum must be an array", param=f"{where}.enum")
        out["enum"] = list(enum)
    required = schema.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise bad_request(f"{where}.required must be an array of strings", param=f"{where}.required")
        out["required"] = list(required)
    props = schema.get("properties")
    if props is not None:
        if not isinstance(props, dict):
            raise bad_request(f"{where}.properties must be an object", param=f"{where}.properties")
        out["properties"] = {name: to_json_schema(value, f"{where}.properties.{name}", depth + 1)
                             for name, value in props.items()}
    if schema.get("items") is not None:
        out["items"] = to_json_schema(schema["items"], f"{where}.items", depth + 1)
    any_of = schema.get("anyOf")
    if any_of is not None:
        if not isinstance(any_of, list):
            raise bad_request(f"{where}.anyOf must be an array", param=f"{where}.anyOf")
        out["anyOf"] = [to_json_schema(s, f"{where}.anyOf[{i}]", depth + 1) for i, s in enumerate(any_of)]
    return out
