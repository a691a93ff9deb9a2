"""An OpenAI image generation as a Replicate prediction, and a prediction's answer as images
or the next poll. Pure functions; no I/O.

The request, as new-api builds it: ``{"input": {...}}`` with ``prompt``; ``size`` as Flux's
``aspect_ratio`` (a square ``1:1``, 1792x1024 ``16:9``, 1024x1792 ``9:16``, 1536x1024
``3:2``, 1024x1536 ``2:3``, any other size reduced to one of Flux's ratios, else
``custom`` with ``width`` / ``height`` rounded to multiples of 32 within 256–1440);
``output_format``; ``num_outputs`` for more than one image; ``prompt_upsampling`` for
``hd`` / ``high`` quality; then the client's own model inputs: an ``input`` object, an
``extra_fields`` object, and any other field OpenAI's request does not have."""

from __future__ import annotations

import math
import re
from typing import Any

from faregate.api import GatewayError, bad_request, json_dumps, json_loads, upstream_error

#: a model on its own endpoint (``owner/name``), or pinned to a version (``owner/name:version``)
MODEL = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]{0,99})/([A-Za-z0-9][A-Za-z0-9._-]{0,99})(?::([0-9a-f]{8,128}))?")
#: a prediction's id, as it goes into the poll's path
PREDICTION_ID = re.compile(r"[A-Za-z0-9]{1,100}")
#: OpenAI's fields (mapped above, or the gateway's own); every other field is a model input
OPENAI_FIELDS = frozenset({"model", "prompt", "n", "size", "quality", "response_format", "style", "user",
                           "background", "moderation", "output_format", "output_compression", "stream",
                           "partial_images", "input", "extra_fields"})
MAX_INPUTS = 100
FLUX_RATIOS = frozenset({"1:1", "16:9", "9:16", "3:2", "2:3", "4:5", "5:4", "3:4", "4:3"})
FLUX_SIDE = (256, 1440, 32)
OPENAI_WIDE = {(1792, 1024): "16:9", (1024, 1792): "9:16"}  # the least, the most, the step of a custom side
RUNNING = frozenset({"starting", "processing"})
FAILED = frozenset({"failed", "canceled", "aborted"})


def _flux_side(value: int) -> int:
    low, high, step = FLUX_SIDE
    return min(high, max(low, round(value / step) * step))


def flux_size(size: str) -> dict[str, Any]:
    """OpenAI's ``WxH`` as Flux's inputs (none for ``auto``)."""
    width, _, height = size.partition("x")
    if not (width.isdigit() and height.isdigit()) or not int(width) or not int(height):
        return {}
    w, h = int(width), int(height)
    if (w, h) in OPENAI_WIDE:  # DALL-E 3's wide sizes are Flux's 16:9 and 9:16 (7:4 is no Flux ratio)
        return {"aspect_ratio": OPENAI_WIDE[w, h]}
    divisor = math.gcd(w, h)
    ratio = f"{w // divisor}:{h // divisor}"
    if ratio in FLUX_RATIOS:
        return {"aspect_ratio": ratio}
    return {"aspect_ratio": "custom", "width": _flux_side(w), "height": _flux_side(h)}


def _object(body: dict[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MAX_INPUTS:
        raise bad_request(f"{name} must be an object of at most {MAX_INPUTS} model inputs", param=name)
    return value


def model_input(body: dict[str, Any]) -> dict[str, Any]:
    """The prediction's ``input`` for a checked generation ``body``."""
    extra = {k: v for k, v in body.items() if k not in OPENAI_FIELDS}
    if len(extra) > MAX_INPUTS:
        raise bad_request(f"at most {MAX_INPUTS} model inputs may be given", param="input")
    out: dict[str, Any] = {"prompt": body["prompt"]}
    size = body.get("size")
    if isinstance(size, str):
        out.update(flux_size(size))
    output_format = body.get("output_format")
    if isinstance(output_format, str):
        out["output_format"] = "jpg" if output_format == "jpeg" else output_format  # Flux names it jpg
    n = body.get("n")
    if isinstance(n, int) and n > 1:
        out["num_outputs"] = n
    if body.get("quality") in ("hd", "high"):
        out["prompt_upsampling"] = True
    return {**out, **_object(body, "extra_fields"), **_object(body, "input"), **extra}


def create_path(model: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Where the prediction is created and its body: a model's own endpoint, or
    ``/v1/predictions`` with the ``version`` a model pinned to one names."""
    match = MODEL.fullmatch(model)
    if match is None:
        raise bad_request(f"a Replicate model is named owner/name or owner/name:version, not {model[:100]!r} "
                          "(the channel's model mapping names it)", param="model")
    payload = {"input": model_input(body)}
    if match[3]:
        return "/v1/predictions", {"version": model, **payload}
    return f"/v1/models/{match[1]}/{match[2]}/predictions", payload


def _error_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("message", "detail", "code"):
            if isinstance(value.get(key), str) and value[key]:
                return str(value[key])
    return "the prediction failed"


def failure(obj: dict[str, Any]) -> GatewayError:
    """A failed or canceled prediction as the client's error (its text redacted by the core's reader)."""
    status = str(obj.get("status"))
    message = _error_text(obj.get("error")) if status == "failed" else f"the prediction was {status}"
    err = upstream_error(502, json_dumps({"error": {"message": message, "type": "upstream_error",
                                                    "code": "prediction_failed"}}))
    return err


def outputs(value: Any) -> list[str]:
    """A prediction's output URLs: one string or a list of them."""
    items = value if isinstance(value, list) else [value]
    return [item.strip() for item in items if isinstance(item, str) and item.strip()]


def read_prediction(body: bytes) -> tuple[str, list[str] | str]:
    """``("done", urls)``, or ``("poll", id)`` for a prediction still running; ``ValueError``
    when ``body`` is not a prediction, the prediction's ``GatewayError`` when it failed."""
    obj = json_loads(body)
    if not isinstance(obj, dict):
        raise ValueError("not a prediction")
    status = obj.get("status")
    if status == "succeeded":
        return "done", outputs(obj.get("output"))  # none: the operation's malformed answer
    if status in FAILED:
        raise failure(obj)
    if status in RUNNING:
        ident = obj.get("id")
        if not isinstance(ident, str) or not PREDICTION_ID.fullmatch(ident):
            raise ValueError("a running prediction without an id")
        return "poll", ident
    raise ValueError("not a prediction status")
