"""Gemini parts ⇄ canonical content parts: text, thoughts and their signatures, inline
and file images, function calls and function responses. Pure functions; what a
message, a response and a stream chunk have in common.

Signatures: Gemini puts an opaque ``thoughtSignature`` on a thought part or on the part
that follows the model's thinking (the first function call of a step, Gemini 3 requires
it back). Canonically a signature rides on a :class:`ReasoningPart`; one without text
stands just before the part it came on, and goes back onto that part."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from faregate.api import (
    ContentPart,
    GatewayError,
    ImagePart,
    JSONDecodeError,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    bad_request,
    json_dumps_str,
    json_loads,
)
from faregate_adapter_gemini.fields import get

#: the signature Google documents for function calls whose thinking came from elsewhere
#: (another model, a client that dropped it): Gemini 3 refuses a call turn without one
SKIP_SIGNATURE = "skip_thought_signature_validator"
_IMAGE_EXTENSIONS = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
                     "webp": "image/webp", "heic": "image/heic", "heif": "image/heif"}


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def image_type(uri: str) -> str | None:
    """The image media type a URI's extension names (None: not an image we can tell)."""
    path = uri.split("?", 1)[0].split("#", 1)[0]
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return _IMAGE_EXTENSIONS.get(ext)


def call_args(arguments: str) -> dict[str, Any]:
    """Canonical arguments (JSON text) as Gemini's ``args`` object. A model's broken JSON
    becomes ``{}`` so the turn can still be sent back."""
    if not arguments.strip():
        return {}
    try:
        value = json_loads(arguments)
    except JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def response_text(response: Any) -> str:
    """A ``functionResponse.response`` as canonical result text: ``{"result": "text"}`` is
    the text (the shape the SDKs wrap plain results in), anything else its JSON."""
    if isinstance(response, dict) and len(response) == 1 and isinstance(response.get("result"), str):
        text: str = response["result"]
        if not isinstance(_json_object(text), dict):  # else it would come back as that object
            return text
    return json_dumps_str(response if response is not None else {})


def _json_object(text: str) -> Any:
    try:
        return json_loads(text) if text.lstrip().startswith("{") else None
    except JSONDecodeError:
        return None


def response_object(text: str) -> dict[str, Any]:
    """Canonical result text as a ``functionResponse.response`` (the inverse of
    :func:`response_text`): a JSON object stays one, other text is wrapped as ``result``."""
    value = _json_object(text)
    return value if isinstance(value, dict) else {"result": text}


# ---- Gemini → canonical ------------------------------------------------------------------


def parse_image(part: dict[str, Any], where: str) -> ImagePart:
    """An ``inlineData`` / ``fileData`` part that holds an image; 400 for other media
    (PDF, audio, video), which the canonical model cannot carry."""
    inline = get(part, "inlineData")
    if isinstance(inline, dict):
        mime = str(get(inline, "mimeType") or "")
        if not mime.startswith("image/"):
            raise bad_request(f"{where}.inlineData: {mime or 'this'} media is not supported by this conversion "
                              "(images only)", param=f"{where}.inlineData.mimeType")
        return ImagePart(data=str(get(inline, "data") or ""), media_type=mime)
    file = get(part, "fileData")
    uri = str(get(file, "fileUri") or "") if isinstance(file, dict) else ""
    mime = str(get(file, "mimeType") or "") if isinstance(file, dict) else ""
    if not mime.startswith("image/") and not (not mime and image_type(uri)):
        raise bad_request(f"{where}.fileData: only images can be converted for this channel",
                          param=f"{where}.fileData")
    return ImagePart(url=uri)


def parse_model_part(part: dict[str, Any], where: str, *, answer: bool = False) -> list[ContentPart]:
    """One part of a ``model`` turn, or (``answer``) of a response candidate, where a part
    with no canonical form (executable code, audio) is left out instead of refused."""
    signature = get(part, "thoughtSignature")
    signature = signature if isinstance(signature, str) and signature else None
    text = get(part, "text")
    if isinstance(text, str) and get(part, "thought") is True:
        return [ReasoningPart(text=text, signature=signature)]
    out: list[ContentPart] = [ReasoningPart(signature=signature)] if signature else []
    call = get(part, "functionCall")
    if isinstance(text, str):
        if text:
            out.append(TextPart(text))
    elif isinstance(call, dict):
        call_id = get(call, "id")
        args = get(call, "args")
        out.append(ToolCallPart(id=call_id if isinstance(call_id, str) and call_id else new_call_id(),
                                name=str(get(call, "name") or ""), arguments=json_dumps_str(args or {})))
    elif get(part, "inlineData") is not None or get(part, "fileData") is not None:
        try:
            out.append(parse_image(part, where))
        except GatewayError:
            if not answer:
                raise
    elif not answer:
        raise bad_request(f"{where}: this part has no form the other channel understands (text, images and "
                          "function calls only)", param=where)
    return out


def parse_visible_part(part: dict[str, Any], where: str) -> TextPart | ImagePart | None:
    """A text or image part of a ``user`` turn (None for empty text)."""
    text = get(part, "text")
    if isinstance(text, str):
        return TextPart(text) if text else None
    if get(part, "inlineData") is not None or get(part, "fileData") is not None:
        return parse_image(part, where)
    raise bad_request(f"{where}: this part has no form the other channel understands (text, images and function "
                      "responses only)", param=where)


# ---- canonical → Gemini ------------------------------------------------------------------


def render_image(part: ImagePart) -> dict[str, Any]:
    if part.data is not None:
        return {"inlineData": {"mimeType": part.media_type or "image/png", "data": part.data}}
    url = part.url or ""
    if url.startswith("data:") and ";base64," in url:
        mime, _, data = url[5:].partition(";base64,")
        return {"inlineData": {"mimeType": mime or "image/png", "data": data}}
    file: dict[str, Any] = {"fileUri": url}
    guessed = image_type(url)
    if guessed:
        file["mimeType"] = guessed
    return {"fileData": file}


def render_model_parts(content: Sequence[ContentPart], *, show_thoughts: bool = True,
                       sign_calls: bool = False) -> list[dict[str, Any]]:
    """A model turn's canonical parts as Gemini parts. Thought text is shown when
    ``show_thoughts``; a signature without text goes onto the next function call when
    the turn has one, else onto the next part. ``sign_calls``: the first call of the turn
    gets :data:`SKIP_SIGNATURE` when it has none (Gemini 3 wants one)."""
    out: list[dict[str, Any]] = []
    pending: str | None = None
    for i, p in enumerate(content):
        if isinstance(p, ReasoningPart):
            if p.redacted:
                continue  # another vendor's encrypted thinking: nothing Gemini can read
            if p.text and show_thoughts:
                part: dict[str, Any] = {"text": p.text, "thought": True}
                if p.signature:
                    part["thoughtSignature"] = p.signature
                out.append(part)
            elif p.signature:
                pending = p.signature
            continue
        if isinstance(p, TextPart):
            if not p.text:
                continue
            if pending and any(isinstance(q, ToolCallPart) for q in content[i + 1:]):
                out.append({"text": p.text})
                continue  # the signature belongs to the coming call
            part = {"text": p.text}
        elif isinstance(p, ImagePart):
            part = render_image(p)
        elif isinstance(p, ToolCallPart):
            call: dict[str, Any] = {"name": p.name, "args": call_args(p.arguments)}
            if p.id:
                call["id"] = p.id
            part = {"functionCall": call}
        else:
            continue
        if pending:
            part["thoughtSignature"] = pending
            pending = None
        out.append(part)
    if pending and out:
        out[-1].setdefault("thoughtSignature", pending)
    if sign_calls:
        first = next((q for q in out if "functionCall" in q), None)
        if first is not None:
            first.setdefault("thoughtSignature", SKIP_SIGNATURE)
    return out
