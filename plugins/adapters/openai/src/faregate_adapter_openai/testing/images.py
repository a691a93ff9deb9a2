"""The fake OpenAI's image endpoints: ``POST /v1/images/generations`` and ``POST
/v1/images/edits`` (multipart or JSON).

Requests are checked against OpenAI's published schema components: generations against
``CreateImageRequest``; a multipart edit, turned into a dict as OpenAI reads it (file
parts as strings, ``image[]`` as the ``image`` array, numbers and booleans typed as the
schema declares them), against ``CreateImageEditRequest``; a JSON edit against
``EditImageBodyJsonParam``. The form is parsed with the standard library's MIME parser,
independently of the gateway's own.

Answers are ``ImagesResponse`` objects holding a real 1x1 PNG (``b64_json``) or a URL;
gpt-image models always answer base64 with ``usage`` (text tokens: one per prompt word;
image tokens: :data:`INPUT_IMAGE_TOKENS` per input image; output: :data:`OUTPUT_TOKENS`
per image by quality, x1.5 for the oblong sizes). With ``stream`` the answer is per image
``partial_images`` ``*.partial_image`` events then one ``*.completed`` event with usage."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import struct
import time
import zlib
from typing import Any

import orjson

from faregate.testing.fake_server import Request, Response
from faregate_adapter_openai.testing.errors import error_body

GENERATIONS_PATH = "/v1/images/generations"
EDITS_PATH = "/v1/images/edits"
INPUT_IMAGE_TOKENS = 194
OUTPUT_TOKENS = {"low": 272, "medium": 1056, "high": 4160}
URL_BASE = "https://files.fake-openai.invalid/images/"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


#: a valid 1x1 transparent PNG
TINY_PNG = (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0))
            + _png_chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00\x00")) + _png_chunk(b"IEND", b""))
TINY_PNG_B64 = base64.b64encode(TINY_PNG).decode()


def is_gpt_image(model: Any) -> bool:
    return isinstance(model, str) and (model.startswith("gpt-image-") or model == "chatgpt-image-latest")


# ---- reading requests ---------------------------------------------------------------------
def request_body(request: Request) -> Any:
    """The request as OpenAI validates it: JSON as sent, a form as a dict (cached in
    ``request.json``); None when it is neither."""
    content_type = request.headers.get("content-type", "")
    if request.json is None and content_type.split(";", 1)[0].strip().lower() == "multipart/form-data":
        request.json = form_dict(request.body, content_type)
    return request.json


def form_dict(body: bytes, content_type: str) -> dict[str, Any] | None:
    """A multipart body as a dict: text fields as strings (typed below), each file as the
    string ``<file name (type, N bytes)>``, ``name[]`` parts gathered into a list under
    ``name``; None when the body is not a form."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    if not message.is_multipart():
        return None
    out: dict[str, Any] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            return None
        payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        filename = part.get_filename()
        value: Any = (f"<file {filename} ({part.get_content_type()}, {len(data)} bytes)>" if filename is not None
                      else data.decode("utf-8", "replace"))
        if name.endswith("[]"):
            out.setdefault(name[:-2], []).append(value)
        elif name in out:
            return None  # a field twice: not a form OpenAI reads
        else:
            out[name] = _typed(name, value)
    return out


def _typed(name: str, value: Any) -> Any:
    """A text field as the edit schema types it: integers and booleans from their text."""
    from faregate_adapter_openai.testing.schema import load_spec  # needs faregate[testing]

    schemas = load_spec()
    schemas = schemas.get("components", {}).get("schemas", schemas)
    declared = str(schemas["CreateImageEditRequest"]["properties"].get(name, ""))
    if name == "partial_images":
        declared += str(schemas["PartialImages"])
    if isinstance(value, str) and "'integer'" in declared and value.lstrip("-").isdigit():
        return int(value)
    if isinstance(value, str) and "'boolean'" in declared and value in ("true", "false"):
        return value == "true"
    return value


def edit_problem(request: Request) -> str | None:
    """Why an edit request breaks OpenAI's schema (multipart or JSON), None when it does not."""
    from faregate_adapter_openai.testing.schema import request_errors  # needs faregate[testing]

    multipart = request.headers.get("content-type", "").lower().startswith("multipart/form-data")
    body = request_body(request)
    if body is None:
        return "the body is neither JSON nor a form OpenAI reads (each text field once)"
    return request_errors(body, "CreateImageEditRequest" if multipart else "EditImageBodyJsonParam")


# ---- answering ---------------------------------------------------------------------------------
def usage(body: dict[str, Any], images: int, input_images: int) -> dict[str, Any]:
    text = max(1, len(str(body.get("prompt", "")).split()))
    image_in = input_images * INPUT_IMAGE_TOKENS
    size = body.get("size") or "1024x1024"
    each = OUTPUT_TOKENS.get(str(body.get("quality")), OUTPUT_TOKENS["medium"])
    if size in ("1536x1024", "1024x1536"):
        each = each * 3 // 2
    out = each * images
    return {"input_tokens": text + image_in, "output_tokens": out, "total_tokens": text + image_in + out,
            "input_tokens_details": {"text_tokens": text, "image_tokens": image_in},
            "output_tokens_details": {"image_tokens": out, "text_tokens": 0}}


def input_images(body: dict[str, Any]) -> int:
    """The images an edit sends (none for a generation)."""
    image = body.get("image", body.get("images"))
    return len(image) if isinstance(image, list) else 0 if image is None else 1


def images_body(body: dict[str, Any], number: int) -> bytes:
    """An ``ImagesResponse`` for ``body``: ``n`` images, base64 or URLs."""
    n = body.get("n") or 1
    gpt_image = is_gpt_image(body.get("model"))
    as_b64 = gpt_image or body.get("response_format") == "b64_json"
    data = [{"b64_json": TINY_PNG_B64} if as_b64 else {"url": f"{URL_BASE}{number}-{i}.png"} for i in range(n)]
    for item in data:
        if body.get("model") == "dall-e-3":
            item["revised_prompt"] = f"A picture of {body.get('prompt')}"
    answer: dict[str, Any] = {"created": int(time.time()), "data": data}
    if gpt_image:
        answer.update(background="opaque", output_format=body.get("output_format") or "png",
                      size=body.get("size") if body.get("size") in ("1024x1536", "1536x1024") else "1024x1024",
                      quality=body.get("quality") if body.get("quality") in OUTPUT_TOKENS else "medium",
                      usage=usage(body, n, input_images(body)))
    return orjson.dumps(answer)


def stream_frames(body: dict[str, Any], edit: bool) -> list[bytes]:
    """Per image: ``partial_images`` partial events, then a completed event with usage."""
    kind = "image_edit" if edit else "image_generation"
    shared = {"created_at": int(time.time()), "size": body.get("size") or "1024x1024",
              "quality": body.get("quality") or "auto", "background": body.get("background") or "auto",
              "output_format": body.get("output_format") or "png"}
    frames: list[bytes] = []
    for _ in range(body.get("n") or 1):
        for index in range(body.get("partial_images") or 0):
            event = {"type": f"{kind}.partial_image", "b64_json": TINY_PNG_B64, "partial_image_index": index,
                     **shared}
            frames.append(_sse(event))
        spent = usage(body, 1, input_images(body))
        spent.pop("output_tokens_details")  # ImagesUsage has none
        frames.append(_sse({"type": f"{kind}.completed", "b64_json": TINY_PNG_B64, **shared, "usage": spent}))
    return frames


def _sse(event: dict[str, Any]) -> bytes:
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


async def answer(request: Request, response: Response) -> None:
    """Answer a checked image request (OpenAI's 400 for what its schema lets through but it refuses)."""
    body = request_body(request)
    if not isinstance(body, dict):
        return response.send(400, error_body(400, "the body is neither JSON nor multipart/form-data",
                                             type="invalid_request_error", code=None))
    if body.get("stream") and not is_gpt_image(body.get("model")):
        return response.send(400, error_body(400, "Streaming is only supported for gpt-image models",
                                             type="invalid_request_error", param="stream", code=None))
    if body.get("stream"):
        return await response.stream(stream_frames(body, request.path == EDITS_PATH))
    await response.reply(200, images_body(body, request.number))
