"""Embeddings between Gemini's and OpenAI's wire formats, both ways (as new-api converts them):

- a Gemini client's ``embedContent`` / ``batchEmbedContents`` for a model on a channel that
  serves OpenAI's ``embeddings`` (an OpenAI-type channel): each request's text parts, joined,
  become one ``input`` string of ``POST /v1/embeddings`` (``outputDimensionality`` its
  ``dimensions``), and OpenAI's list comes back as ``{"embedding": {"values"}}`` or
  ``{"embeddings": [...]}`` with ``usageMetadata.promptTokenCount`` from its usage;
- an OpenAI client's ``POST /v1/embeddings`` for a model on a Gemini channel: each input
  string becomes one request of ``batchEmbedContents`` (``dimensions`` its
  ``outputDimensionality``), and the embeddings come back as OpenAI's list (``base64`` packed
  as OpenAI packs it: little-endian float32), its ``usage`` the upstream's
  ``usageMetadata`` when reported, else the gateway's estimate of the input.

What has no counterpart is refused with a 400 naming the field: parts other than text,
token-id input, requests of one batch asking different dimensions. ``taskType`` and
``title`` (Gemini's retrieval hints) and ``user`` (OpenAI's) are not sent. Pure functions."""

from __future__ import annotations

import base64
import sys
from array import array
from typing import Any, Protocol, runtime_checkable

from faregate.api import UpstreamRequest, UpstreamTarget, Usage, bad_request, estimator
from faregate_adapter_gemini.fields import get
from faregate_adapter_gemini.names import BATCH_EMBED
from faregate_adapter_gemini.validate import number

#: OpenAI's endpoint kind of ``POST /v1/embeddings`` (what an OpenAI-type provider serves)
OPENAI_EMBEDDINGS = "embeddings"


@runtime_checkable
class OpenAIJsonProvider(Protocol):
    """A provider of OpenAI's JSON endpoints (the OpenAI plugin's, structurally)."""

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        ...


def _tokens(value: Any) -> int | None:
    """A reported token count: a positive whole number, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


# ---- a Gemini client, an OpenAI channel ---------------------------------------------------------
def _text(request: dict[str, Any], where: str) -> str:
    parts = get(get(request, "content") or {}, "parts") or []
    texts = []
    for i, part in enumerate(parts):
        text = get(part, "text") if isinstance(part, dict) else None
        if not isinstance(text, str):
            raise bad_request(f"{where}content.parts[{i}]: only text parts can be embedded on this model's channel",
                              param=f"{where}content.parts[{i}]")
        texts.append(text)
    joined = "\n".join(texts)
    if not joined:
        raise bad_request(f"{where}content has no text to embed", param=f"{where}content")
    return joined


def _dimensions(request: dict[str, Any]) -> Any:
    """The checked ``outputDimensionality`` as a JSON integer (Google also reads ``"4"`` and ``4.0``)."""
    config = get(request, "embedContentConfig")
    nested = number(config, "outputDimensionality") if isinstance(config, dict) else None
    return number(request, "outputDimensionality") or nested


def openai_request(body: dict[str, Any], action: str, model: str) -> dict[str, Any]:
    """A checked ``embedContent`` / ``batchEmbedContents`` body as OpenAI's ``CreateEmbeddingRequest``."""
    requests = get(body, "requests") if action == BATCH_EMBED else [body]
    assert isinstance(requests, list)
    prefix = "requests[{}]." if action == BATCH_EMBED else ""
    inputs = [_text(r, prefix.format(i)) for i, r in enumerate(requests)]
    asked = {_dimensions(r) for r in requests}
    if len(asked) > 1:
        raise bad_request("every request of the batch must ask the same outputDimensionality on this model's "
                          "channel", param="requests")
    out: dict[str, Any] = {"model": model, "input": inputs, "encoding_format": "float"}
    dimensions = asked.pop()
    if dimensions is not None:
        out["dimensions"] = dimensions
    return out


def gemini_answer(body: Any, action: str) -> tuple[dict[str, Any], Usage | None]:
    """OpenAI's ``CreateEmbeddingResponse`` as the Gemini action's answer, and its usage;
    ``ValueError`` (``TypeError``, ``KeyError``) when it is no such answer."""
    data = body["data"]
    if not isinstance(data, list) or not data:
        raise ValueError("no embeddings")
    values = [item["embedding"] for item in sorted(data, key=lambda item: int(item["index"]))]
    if not all(isinstance(v, list) for v in values):
        raise ValueError("an embedding that is not a list of floats")
    usage = body.get("usage")
    prompt = _tokens(usage.get("prompt_tokens") if isinstance(usage, dict) else None)
    answer: dict[str, Any] = ({"embeddings": [{"values": v} for v in values]} if action == BATCH_EMBED
                              else {"embedding": {"values": values[0]}})
    if prompt is None:
        return answer, None
    answer["usageMetadata"] = {"promptTokenCount": prompt}
    return answer, Usage(input_tokens=prompt)


# ---- an OpenAI client, a Gemini channel ---------------------------------------------------------
def batch_request(body: dict[str, Any], model: str) -> dict[str, Any]:
    """A checked ``CreateEmbeddingRequest`` as ``batchEmbedContents`` for ``model``."""
    value = body["input"]
    inputs = [value] if isinstance(value, str) else value
    if not all(isinstance(text, str) for text in inputs):
        raise bad_request("input: a Gemini channel embeds text only (strings), not token ids", param="input")
    name = f"models/{model}"
    dimensions = body.get("dimensions")
    requests = [{"model": name, "content": {"parts": [{"text": text}]}} for text in inputs]
    if dimensions is not None:
        for request in requests:
            request["outputDimensionality"] = dimensions
    return {"requests": requests}


def _encoded(values: list[float], encoding: str) -> list[float] | str:
    if encoding != "base64":
        return values
    packed = array("f", values)  # float32, as OpenAI packs them: little-endian
    if sys.byteorder == "big":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()


def openai_answer(body: Any, request: dict[str, Any]) -> tuple[dict[str, Any], Usage | None]:
    """``batchEmbedContents``' answer as OpenAI's ``CreateEmbeddingResponse`` to ``request``
    and its usage (None when the upstream reported none: the answer then shows the estimate);
    ``ValueError`` (``TypeError``, ``KeyError``) when it is no such answer."""
    embeddings = body["embeddings"]
    value = request["input"]
    count = 1 if isinstance(value, str) else len(value)
    if not isinstance(embeddings, list) or len(embeddings) != count:
        raise ValueError("not one embedding an input")
    encoding = request.get("encoding_format") or "float"
    data = []
    for index, embedding in enumerate(embeddings):
        values = embedding["values"]
        if not isinstance(values, list):
            raise ValueError("embedding values are not a list")
        data.append({"object": "embedding", "index": index, "embedding": _encoded(values, encoding)})
    metadata = body.get("usageMetadata")
    prompt = _tokens(metadata.get("promptTokenCount") if isinstance(metadata, dict) else None)
    shown = prompt or sum(estimator.text(t) for t in ([value] if isinstance(value, str) else value))
    answer = {"object": "list", "data": data, "model": request.get("model") or "",
              "usage": {"prompt_tokens": shown, "total_tokens": shown}}
    return answer, None if prompt is None else Usage(input_tokens=prompt, output_tokens=0)
