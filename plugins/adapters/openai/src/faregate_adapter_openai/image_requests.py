"""What an OpenAI image request asks for, checked field by field before anything goes
upstream: ``POST /v1/images/generations`` (JSON, ``CreateImageRequest``) and image edits
(multipart ``CreateImageEditRequest`` or JSON ``EditImageBodyJsonParam``). A bad value is
a 400 naming the field; what passes becomes an :class:`ImageAsk`, from which the request's
summary (price inputs) is made.

Pricing inputs are new-api's: a per-call price (``ModelPrice``) times the other ratios
``n`` (images), ``size`` and ``quality`` (dall-e's size and HD multipliers, 1 for other
models), or, for token-priced models, the upstream's reported usage. The output bound
reserved per image is OpenAI's published token count of a gpt-image-1 image of the asked
size and quality (the largest when ``auto``), new-api's 1584 for other models."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faregate.api import FilePart, Form, RequestSummary, bad_request, estimator

#: new-api's model when a generation request names none (its distributor's default)
DEFAULT_GENERATION_MODEL = "dall-e"
MAX_IMAGES = 10  # n: OpenAI's 1-10
MAX_EDIT_IMAGES = 16  # images one edit may send (OpenAI's limit for gpt-image models)
MAX_PROMPT = 32_000  # characters, gpt-image models (the most any OpenAI model takes)
MAX_MODEL_NAME = 256
MAX_USER = 512
MAX_IMAGE_BYTES = 50 * 1024 * 1024  # one gpt-image input image (OpenAI: under 50 MB)
MAX_SMALL_IMAGE_BYTES = 4 * 1024 * 1024  # a dall-e-2 image or any mask (OpenAI: under 4 MB)
MAX_IMAGE_URL = 20_971_520  # characters of a JSON edit's image_url (OpenAI's schema)
MAX_FILE_ID = 256
MAX_SIDE = 16_384  # pixels of a WxH size another vendor's model may take

#: new-api's per-image output estimate (``MaxTokens`` of its image requests)
NEW_API_IMAGE_TOKENS = 1584
#: output tokens of one gpt-image-1 image by quality and size (OpenAI's pricing guide)
GPT_IMAGE_TOKENS: dict[str, dict[str, int]] = {
    "low": {"1024x1024": 272, "1024x1536": 408, "1536x1024": 400},
    "medium": {"1024x1024": 1056, "1024x1536": 1584, "1536x1024": 1568},
    "high": {"1024x1024": 4160, "1024x1536": 6240, "1536x1024": 6208},
}
PARTIAL_IMAGE_TOKENS = 100  # each streamed partial image (OpenAI's pricing guide)

DALL_E_2 = ("dall-e-2", "dall-e")  # new-api sizes and prices "dall-e" as dall-e-2
DALL_E_3 = "dall-e-3"
#: the sizes of the first gpt-image models; later ones (gpt-image-2 on) take any WIDTHxHEIGHT
GPT_IMAGE_SIZES = ("auto", "1024x1024", "1536x1024", "1024x1536")
FIXED_SIZE_GPT_IMAGES = ("gpt-image-1", "chatgpt-image-latest")
DALL_E_2_SIZES = ("256x256", "512x512", "1024x1024")
DALL_E_3_SIZES = ("1024x1024", "1792x1024", "1024x1792")
GPT_IMAGE_QUALITIES = ("low", "medium", "high", "xhigh", "max", "auto")
QUALITIES = ("standard", "hd", *GPT_IMAGE_QUALITIES)
EDIT_QUALITIES = ("standard", *GPT_IMAGE_QUALITIES)
#: the enumerated options, and which each request takes (an edit takes no style)
CHOICES: dict[str, tuple[str, ...]] = {
    "response_format": ("url", "b64_json"),
    "output_format": ("png", "jpeg", "webp", "gif", "svg"),
    "background": ("transparent", "opaque", "auto"),
    "moderation": ("low", "auto"),
    "style": ("vivid", "natural"),
    "input_fidelity": ("high", "low"),
    "complexity": ("low", "medium", "high"),
}
GENERATION_CHOICES = ("response_format", "output_format", "background", "moderation", "style", "complexity")
EDIT_CHOICES = ("response_format", "output_format", "background", "input_fidelity", "moderation", "complexity")
#: ``svg.reasoning.effort`` (the SVG author's reasoning)
SVG_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: a GIF's frames and each frame's delay (OpenAI: 2-16 frames; a delay capped at 655,350 ms)
FRAME_COUNT = (2, 16)
MAX_FRAME_DURATION_MS = 655_350
#: the form's text fields that carry numbers and booleans
FORM_INTEGERS = ("n", "output_compression", "partial_images", "frame_count", "frame_duration_ms")
FORM_BOOLEANS = ("stream",)
#: the form fields that carry files (every other field is text); ``markup`` is a transparent
#: PNG laid over the first image to guide the edit
FILE_FIELDS = ("image", "image[]", "mask", "markup")
_SIZE = re.compile(r"([1-9][0-9]{0,4})x([1-9][0-9]{0,4})")


def is_gpt_image(model: str) -> bool:
    return model.startswith("gpt-image-") or model == "chatgpt-image-latest"


def takes_fixed_sizes(model: str) -> bool:
    """gpt-image-1 (and -mini, 1.5) and chatgpt-image-latest take only OpenAI's three sizes."""
    return model.startswith(FIXED_SIZE_GPT_IMAGES)


@dataclass(slots=True, frozen=True)
class ImageAsk:
    """A checked image request: what prices and bounds it."""

    model: str
    prompt: str
    n: int
    size: str | None
    quality: str | None
    stream: bool
    partial_images: int
    input_images: int = 0  # an edit's images (files or references)

    def other_ratios(self) -> dict[str, float]:
        """new-api's multipliers of a per-call price: images, dall-e's size and HD quality."""
        size_ratio, quality_ratio = 1.0, 1.0
        if self.model.startswith("dall-e"):
            size = self.size or "1024x1024"
            size_ratio = {"256x256": 0.4, "512x512": 0.45, "1792x1024": 2.0, "1024x1792": 2.0}.get(size, 1.0)
            if self.model == DALL_E_3 and self.quality == "hd":
                quality_ratio = 1.5 if size in ("1792x1024", "1024x1792") else 2.0
        return {"n": float(self.n), "size": size_ratio, "quality": quality_ratio}

    def output_tokens(self, *, upper: bool) -> int:
        """Output tokens of one image: the most it may cost (``upper``, for the reservation)
        or the least (an estimate that never overcharges, when the upstream reports none)."""
        partials = self.partial_images * PARTIAL_IMAGE_TOKENS
        if not is_gpt_image(self.model):
            return NEW_API_IMAGE_TOKENS + partials if upper else 0
        # an unknown (auto) quality or size: the dearest one for the bound, the cheapest otherwise
        qualities = [self.quality] if self.quality in GPT_IMAGE_TOKENS else list(GPT_IMAGE_TOKENS)
        counts = [row[size] for row in (GPT_IMAGE_TOKENS[q] for q in qualities)
                  for size in row if self.size not in row or size == self.size]
        return (max(counts) if upper else min(counts)) + partials

    def summary(self) -> RequestSummary:
        """The prompt estimated, each input image at the estimator's image cost; one image's
        output bound as max_tokens, times ``n`` with the other ratios."""
        prompt = estimator.text(self.prompt) + self.input_images * estimator.IMAGE_TOKENS
        return RequestSummary(model=self.model, stream=self.stream, max_tokens=self.output_tokens(upper=True),
                              prompt_tokens=prompt, other_ratios=self.other_ratios())


# ---- field checks ------------------------------------------------------------------------
def _text(value: Any, name: str, limit: int, *, required: bool = False) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise bad_request(f"{name} must be a non-empty string", param=name)
    if len(value) > limit:
        raise bad_request(f"{name} may be at most {limit} characters", param=name)
    return value


def _integer(value: Any, name: str, low: int, high: int) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise bad_request(f"{name} must be a whole number from {low} to {high}", param=name)
    return value


def _boolean(value: Any, name: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise bad_request(f"{name} must be a boolean", param=name)
    return value


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        raise bad_request(f"{name} must be one of {', '.join(allowed)}", param=name)
    assert isinstance(value, str)
    return value


def _model(value: Any, default: str | None) -> str:
    if value is None and default is not None:
        return default
    if value is None:
        raise bad_request("model is required", param="model")
    model = _text(value, "model", MAX_MODEL_NAME, required=True)
    assert model is not None
    return model


def _prompt(value: Any, model: str) -> str:
    limit = 1000 if model in DALL_E_2 else 4000 if model == DALL_E_3 else MAX_PROMPT
    prompt = _text(value, "prompt", limit, required=True)
    assert prompt is not None
    return prompt


def _size(value: Any, model: str, *, edit: bool) -> str | None:
    """OpenAI's sizes for its own models; for another vendor's, ``auto`` or any WxH."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_request("size must be a string such as 1024x1024", param="size")
    if model in DALL_E_2:
        allowed: tuple[str, ...] | None = DALL_E_2_SIZES
    elif model == DALL_E_3 and not edit:
        allowed = DALL_E_3_SIZES
    elif takes_fixed_sizes(model):
        allowed = GPT_IMAGE_SIZES
    else:
        allowed = None
    if allowed is not None and value not in allowed:
        raise bad_request(f"size must be one of {', '.join(allowed)} for {model}", param="size")
    if allowed is None and value != "auto":
        match = _SIZE.fullmatch(value)
        if match is None or max(int(match[1]), int(match[2])) > MAX_SIDE:
            raise bad_request(f"size must be auto or WIDTHxHEIGHT (at most {MAX_SIDE} pixels a side)",
                              param="size")
    return value


def _quality(value: Any, model: str, allowed: tuple[str, ...]) -> str | None:
    if model in DALL_E_2:
        allowed = ("standard", "auto")
    elif model == DALL_E_3:
        allowed = ("standard", "hd", "auto")
    elif is_gpt_image(model):
        allowed = GPT_IMAGE_QUALITIES
    return _choice(value, "quality", allowed)


def _common(body: Mapping[str, Any], model: str, choices: tuple[str, ...]) -> tuple[bool, int]:
    """The options every image request shares; (stream, partial_images)."""
    for name in choices:
        _choice(body.get(name), name, CHOICES[name])
    _integer(body.get("output_compression"), "output_compression", 0, 100)
    _integer(body.get("frame_count"), "frame_count", *FRAME_COUNT)
    _integer(body.get("frame_duration_ms"), "frame_duration_ms", 0, MAX_FRAME_DURATION_MS)
    _text(body.get("user"), "user", MAX_USER)
    if body.get("safety_identifier") != "":  # empty: OpenAI falls back to user
        _text(body.get("safety_identifier"), "safety_identifier", MAX_USER)
    _svg(body.get("svg"))
    stream = _boolean(body.get("stream"), "stream")
    partial_images = _integer(body.get("partial_images"), "partial_images", 0, 3) or 0
    return stream, partial_images


def _svg(value: Any) -> None:
    """``svg``: the SVG author's ``model`` and ``reasoning.effort`` (either may be left out)."""
    if value is None:
        return
    if not isinstance(value, dict) or set(value) - {"model", "reasoning"}:
        raise bad_request("svg must be an object with model and reasoning", param="svg")
    _text(value.get("model"), "svg.model", MAX_MODEL_NAME)
    reasoning = value.get("reasoning")
    if reasoning is not None:
        if not isinstance(reasoning, dict) or set(reasoning) - {"effort"}:
            raise bad_request("svg.reasoning must be an object with an effort", param="svg.reasoning")
        _choice(reasoning.get("effort"), "svg.reasoning.effort", SVG_EFFORTS)


def _count(value: Any, model: str) -> int:
    n = _integer(value, "n", 1, MAX_IMAGES)
    if n is not None and n > 1 and model == DALL_E_3:
        raise bad_request("n must be 1 for dall-e-3", param="n")
    return n or 1


# ---- the three request shapes ---------------------------------------------------------------
def generation(body: Mapping[str, Any]) -> ImageAsk:
    """A ``CreateImageRequest`` body; the model defaults to new-api's ``dall-e``."""
    model = _model(body.get("model"), DEFAULT_GENERATION_MODEL)
    prompt = _prompt(body.get("prompt"), model)
    n = _count(body.get("n"), model)
    size = _size(body.get("size"), model, edit=False)
    quality = _quality(body.get("quality"), model, QUALITIES)
    stream, partials = _common(body, model, GENERATION_CHOICES)
    return ImageAsk(model, prompt, n, size, quality, stream, partials)


def json_edit(body: Mapping[str, Any]) -> ImageAsk:
    """An ``EditImageBodyJsonParam`` body: images by URL or file id (the upstream fetches them)."""
    model = _model(body.get("model"), None)
    images = body.get("images")
    if not isinstance(images, list) or not 1 <= len(images) <= MAX_EDIT_IMAGES:
        raise bad_request(f"images must be an array of 1 to {MAX_EDIT_IMAGES} image references", param="images")
    for image in images:
        _image_ref(image, "images")
    if body.get("mask") is not None:
        _image_ref(body["mask"], "mask")
    prompt = _prompt(body.get("prompt"), model)
    n = _count(body.get("n"), model)
    size = _size(body.get("size"), model, edit=True)
    quality = _quality(body.get("quality"), model, GPT_IMAGE_QUALITIES)
    stream, partials = _common(body, model, EDIT_CHOICES)
    return ImageAsk(model, prompt, n, size, quality, stream, partials, len(images))


def _image_ref(value: Any, name: str) -> None:
    """``{"image_url": ...}`` (an http(s) or data URL) or ``{"file_id": ...}``, not both."""
    if not isinstance(value, dict) or set(value) - {"image_url", "file_id"} or len(value) != 1:
        raise bad_request(f"each {name} item must be an object with either image_url or file_id", param=name)
    if "file_id" in value:
        _text(value["file_id"], name, MAX_FILE_ID, required=True)
        return
    url = _text(value["image_url"], name, MAX_IMAGE_URL, required=True)
    assert url is not None
    if not url.startswith(("https://", "http://", "data:image/")):
        raise bad_request(f"{name} image_url must be an http(s) URL or a data:image/ URL", param=name)


def form_edit(form: Form) -> ImageAsk:
    """A multipart ``CreateImageEditRequest``: image files under ``image`` or ``image[]``,
    an optional ``mask``, the rest text fields. A text field sent twice is refused (the
    gateway and the upstream could read different values of it)."""
    for name, values in form.lists.items():
        if name not in FILE_FIELDS and any(isinstance(v, FilePart) for v in values):
            raise bad_request(f"{name} must be a text field, not a file", param=name)
        if name not in FILE_FIELDS and len(values) > 1:
            raise bad_request(f"{name} may be sent once", param=name)
    fields = typed_fields(form.fields)
    model = _model(fields.get("model"), None)
    images = [*form.lists.get("image", ()), *form.lists.get("image[]", ())]
    if not images:
        raise bad_request("image is required: one or more image files", param="image")
    limit = 1 if model in DALL_E_2 else MAX_EDIT_IMAGES
    if len(images) > limit:
        raise bad_request(f"{model} takes at most {limit} image(s)", param="image")
    small = model in DALL_E_2
    for image in images:
        _image_file(image, "image", png_only=small, limit=MAX_SMALL_IMAGE_BYTES if small else MAX_IMAGE_BYTES)
    for name, limit in (("mask", MAX_SMALL_IMAGE_BYTES), ("markup", MAX_IMAGE_BYTES)):
        files = form.lists.get(name, [])
        if len(files) > 1:
            raise bad_request(f"{name} may be sent once", param=name)
        for file in files:
            _image_file(file, name, png_only=True, limit=limit)
    if "mask" in form.lists and "markup" in form.lists:
        raise bad_request("markup cannot be combined with mask", param="markup")
    prompt = _prompt(fields.get("prompt"), model)
    n = _count(fields.get("n"), model)
    size = _size(fields.get("size"), model, edit=True)
    quality = _quality(fields.get("quality"), model, EDIT_QUALITIES)
    stream, partials = _common(fields, model, EDIT_CHOICES)
    return ImageAsk(model, prompt, n, size, quality, stream, partials, len(images))


def typed_fields(fields: Mapping[str, str]) -> dict[str, Any]:
    """A form's text fields with its numbers and booleans as JSON would carry them
    (``"2"`` → 2, ``"true"`` → True), ``svg[model]`` and ``svg[reasoning][effort]`` as the
    ``svg`` object; 400 naming a field whose text is neither."""
    typed: dict[str, Any] = {name: value for name, value in fields.items() if not name.startswith("svg[")}
    svg = {name: value for name, value in fields.items() if name.startswith("svg[")}
    if svg:
        if "svg" in fields:
            raise bad_request("svg must be an object with model and reasoning", param="svg")
        typed["svg"] = _form_svg(svg)
    for name in FORM_INTEGERS:
        text = fields.get(name)
        if text is not None:
            if not (text.isascii() and text.isdigit() and len(text) <= 6):
                raise bad_request(f"{name} must be a whole number", param=name)
            typed[name] = int(text)
    for name in FORM_BOOLEANS:
        text = fields.get(name)
        if text is not None:
            if text not in ("true", "false"):
                raise bad_request(f"{name} must be true or false", param=name)
            typed[name] = text == "true"
    return typed


def _form_svg(fields: Mapping[str, str]) -> dict[str, Any]:
    """``svg[model]`` and ``svg[reasoning][effort]`` (the SDK's form encoding of ``svg``)."""
    svg: dict[str, Any] = {}
    for name, value in fields.items():
        if name == "svg[model]":
            svg["model"] = value
        elif name == "svg[reasoning][effort]":
            svg["reasoning"] = {"effort": value}
        else:
            raise bad_request(f"unknown field {name!r}: svg takes model and reasoning[effort]", param="svg")
    return svg


def _image_file(value: str | FilePart, name: str, *, png_only: bool, limit: int) -> None:
    if not isinstance(value, FilePart):
        raise bad_request(f"{name} must be a file", param=name)
    kind = image_type(value.data)
    if kind is None or (png_only and kind != "png"):
        wanted = "a PNG" if png_only else "a PNG, JPEG or WEBP"
        raise bad_request(f"{name} must be {wanted} image", param=name)
    if len(value.data) > limit:
        raise bad_request(f"{name} must be under {limit // (1024 * 1024)} MB", param=name)


def image_type(data: bytes) -> str | None:
    """The image format of ``data`` by its signature: png, jpeg, webp, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None
