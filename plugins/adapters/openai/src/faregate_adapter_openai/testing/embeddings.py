"""The fake upstream's embeddings: deterministic vectors (the same input always gives the
same vector, different inputs different ones), ``dimensions`` honoured (16 by default, to
keep test bodies small), ``encoding_format`` ``float`` or ``base64`` (little-endian
float32, as OpenAI sends it), usage counted one token per whitespace-separated word or
per token id."""

from __future__ import annotations

import base64
import hashlib
import math
import struct
from typing import Any

import orjson

DEFAULT_DIMENSIONS = 16


def vector(item: Any, dimensions: int) -> list[float]:
    """A unit vector derived from ``item``'s text (or token ids)."""
    seed = hashlib.sha256(orjson.dumps(item)).digest()
    raw = [(seed[i % len(seed)] ^ (i * 37 & 0xFF)) - 127.5 for i in range(dimensions)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [struct.unpack("<f", struct.pack("<f", v / norm))[0] for v in raw]  # float32, as sent


def items(value: Any) -> list[Any]:
    """The inputs one by one: a string or a token array is one input."""
    if isinstance(value, str) or (isinstance(value, list) and value and all(isinstance(v, int) for v in value)):
        return [value]
    return list(value)


def tokens(item: Any) -> int:
    return len(item) if isinstance(item, list) else max(1, len(item.split()))


def embeddings_body(body: dict[str, Any]) -> bytes:
    dimensions = body.get("dimensions") or DEFAULT_DIMENSIONS
    encoded = body.get("encoding_format") == "base64"
    data = []
    for index, item in enumerate(items(body["input"])):
        vec = vector(item, dimensions)
        embedding: Any = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode() if encoded else vec
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    used = sum(tokens(item) for item in items(body["input"]))
    return orjson.dumps({"object": "list", "data": data, "model": body["model"],
                         "usage": {"prompt_tokens": used, "total_tokens": used}})
