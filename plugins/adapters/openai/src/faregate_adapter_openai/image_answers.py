"""What an OpenAI image answer says for billing, read on the side while its bytes go to
the client unchanged: how many images came back and the upstream's ``usage`` (gpt-image
models report tokens: input with its text/image split, output).

Answers carry images as base64 strings of megabytes. Parsing them would hold the event
loop (orjson keeps the GIL), so their values are cut out first with ``bytes.find`` and
only the small rest is parsed (:func:`without_b64`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faregate.api import AttemptFailed, GatewayError, JSONDecodeError, PassthroughStream, Usage, json_loads

_B64_KEY = b'"b64_json"'
MAX_TOKENS = 2**31 - 1
#: the stream events of image generation and image edits (OpenAI's ImageGen/ImageEditStreamEvent)
PARTIAL_EVENTS = frozenset({"image_generation.partial_image", "image_edit.partial_image"})
COMPLETED_EVENTS = frozenset({"image_generation.completed", "image_edit.completed"})


def without_b64(body: bytes) -> bytes:
    """``body`` with every ``"b64_json"`` value emptied. An unescaped ``"b64_json"``
    followed by a colon is always a key (inside a string its quotes would be escaped),
    and base64 holds no quote or backslash, so its value ends at the next quote; a
    value holding a backslash is left alone (the parser then reads it whole)."""
    parts: list[bytes] = []
    pos = 0
    while True:
        key = body.find(_B64_KEY, pos)
        if key < 0:
            break
        opening = body.find(b'"', key + len(_B64_KEY))
        if opening < 0 or body[key + len(_B64_KEY):opening].strip() != b":":
            parts.append(body[pos:key + len(_B64_KEY)])
            pos = key + len(_B64_KEY)
            continue
        closing = body.find(b'"', opening + 1)
        if closing < 0 or body.find(b"\\", opening + 1, closing) >= 0:
            break
        parts.append(body[pos:opening + 1])
        pos = closing
    parts.append(body[pos:])
    return b"".join(parts)


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS:
        return value
    return None


def parse_usage(value: Any) -> Usage | None:
    """OpenAI's image ``usage`` (``ImagesUsage`` / ``ImageGenUsage``): input tokens with
    their image part, output tokens; None when absent or not numbers."""
    if not isinstance(value, dict):
        return None
    input_tokens, output_tokens = _count(value.get("input_tokens")), _count(value.get("output_tokens"))
    if input_tokens is None or output_tokens is None:
        return None
    details = value.get("input_tokens_details")
    image_tokens = _count(details.get("image_tokens")) if isinstance(details, dict) else None
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                 image_tokens=min(image_tokens or 0, input_tokens))


def malformed(what: str) -> AttemptFailed:
    """An answer the client's SDK could not read: another channel may answer instead."""
    return AttemptFailed(GatewayError(502, f"upstream sent a malformed {what}", code="bad_response_body",
                                      upstream=True))


def read_answer(body: bytes) -> tuple[int, Usage | None]:
    """The images of an ``ImagesResponse`` and its usage; :class:`AttemptFailed` when the
    body is not one (no ``created`` time, no images)."""
    try:
        obj = json_loads(without_b64(body))
    except JSONDecodeError:
        obj = None
    if not isinstance(obj, dict) or _count(obj.get("created")) is None:
        raise malformed("image response")
    data = obj.get("data")
    if not isinstance(data, list) or not data or not all(isinstance(item, dict) for item in data):
        raise malformed("image response (no images)")
    return len(data), parse_usage(obj.get("usage"))


class ImageEventStream(PassthroughStream):
    """Image generation / edit stream events, forwarded unchanged: partial images, then one
    ``*.completed`` event per image with its usage. Done after the ``expected`` images; the
    usage is their sum. With a per-call price, the bill counts the images completed
    (``other_ratios``' ``n``), so a stream cut before its image costs nothing."""

    def __init__(self, expected: int, ratios: Mapping[str, float] | None) -> None:
        self.expected = expected
        self.completed = 0
        self.usage: Usage | None = None
        self.done = False
        self.error: GatewayError | None = None
        self.output_chars = 0
        self.ratios = ratios
        # None: token-priced, billed on the usage alone (it covers every image already)
        self.other_ratios = {**ratios, "n": 0.0} if ratios is not None else {}

    def feed(self, event: str | None, data: bytes) -> bool:
        if data == b"[DONE]":
            self.done = True
            return True
        try:
            obj = json_loads(without_b64(data))
        except JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self.error = GatewayError(502, "upstream sent a malformed stream event", code="bad_response_body",
                                      upstream=True)
            return False
        if isinstance(obj.get("error"), dict) or obj.get("type") == "error":
            err = obj["error"] if isinstance(obj.get("error"), dict) else obj
            self.error = GatewayError(502, str(err.get("message") or "upstream error"),
                                      type=str(err.get("type") or "upstream_error"), code=err.get("code"),
                                      upstream=True)
            return False
        if obj.get("type") in COMPLETED_EVENTS:
            self._complete(parse_usage(obj.get("usage")))
        return True

    def _complete(self, usage: Usage | None) -> None:
        self.completed += 1
        if usage is not None:
            total = self.usage or Usage()
            total.input_tokens += usage.input_tokens
            total.output_tokens += usage.output_tokens
            total.image_tokens += usage.image_tokens
            self.usage = total
        if self.ratios is not None:
            self.other_ratios = {**self.ratios, "n": float(min(self.completed, self.expected))}
        self.done = self.completed >= self.expected
