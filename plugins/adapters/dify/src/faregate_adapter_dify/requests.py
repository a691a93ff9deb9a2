"""The canonical :class:`ChatRequest` as a Dify chat app request (``POST
/v1/chat-messages``), as new-api builds it: the whole conversation flattened into
``query`` (each turn ``SYSTEM:`` / ``USER:`` / ``ASSISTANT:``, a newline, its text), empty
``inputs``, the client's ``user`` (else one made per request), ``response_mode``
``streaming`` or ``blocking``, images by URL as ``files``. Pure functions; no I/O.

Two fields an OpenAI client may add for a Dify app (``extra_body``): ``conversation_id``
(continue a conversation Dify keeps; it belongs to the ``user`` that began it) and
``inputs`` (the app's variables, an object). Images given inline (``data:`` URIs) would
need an upload to Dify first: they are refused (400) rather than dropped."""

from __future__ import annotations

import uuid
from typing import Any

from faregate.api import ChatRequest, ImagePart, Message, TextPart, ToolResultPart, bad_request

MAX_INPUTS = 100  # variables of one app: more is not a Dify app's input form
MAX_USER = 256
#: new-api's labels of the turns in ``query``
LABELS = {"system": "SYSTEM", "developer": "SYSTEM", "assistant": "ASSISTANT"}


def _turn_text(msg: Message) -> str:
    """A turn's text: its text parts, or (a tool turn) its results' text."""
    text = msg.text()
    for part in msg.content:
        if isinstance(part, ToolResultPart):
            text += "".join(p.text for p in part.content if isinstance(p, TextPart))
    return text


def _files(msg: Message) -> list[dict[str, Any]]:
    files = []
    for part in msg.content:
        if not isinstance(part, ImagePart):
            continue
        if part.data is not None or not part.url or part.url.startswith("data:"):
            raise bad_request("a Dify channel takes images by URL only (inline data is not uploaded)",
                              param="messages")
        # Dify's field is transfer_method (new-api sends transfer_mode, which Dify does not read)
        files.append({"type": "image", "transfer_method": "remote_url", "url": part.url})
    return files


def render_query(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``query`` (the conversation as new-api flattens it) and the ``files`` of user turns."""
    lines: list[str] = []
    files: list[dict[str, Any]] = []
    for msg in messages:
        label = LABELS.get(msg.role, "USER")  # user and tool turns are the user's
        if label == "USER":
            files += _files(msg)
        text = _turn_text(msg)
        if text:
            lines.append(f"{label}: \n{text}\n")
    query = "".join(lines)
    if not query:
        raise bad_request("messages: a Dify channel needs some text to send", param="messages")
    return query, files


def _is_uuid(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > 36:
        return False
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _extra(request: ChatRequest) -> dict[str, Any]:
    out: dict[str, Any] = {}
    conversation = request.extra.get("conversation_id")
    if conversation is not None:
        if not _is_uuid(conversation):  # Dify's ids are UUIDs (it answers 400 to anything else)
            raise bad_request("conversation_id must be a Dify conversation id (a UUID)", param="conversation_id")
        out["conversation_id"] = conversation
    inputs = request.extra.get("inputs", {})
    if not isinstance(inputs, dict) or len(inputs) > MAX_INPUTS \
            or not all(isinstance(k, str) for k in inputs):
        raise bad_request(f"inputs must be an object of at most {MAX_INPUTS} variables", param="inputs")
    out["inputs"] = inputs
    return out


def render_request(request: ChatRequest, stream: bool) -> dict[str, Any]:
    query, files = render_query(request.messages)
    user = request.user
    if user is not None and (not user or len(user) > MAX_USER):
        raise bad_request(f"user must be 1 to {MAX_USER} characters", param="user")
    body: dict[str, Any] = {**_extra(request), "query": query,
                            "response_mode": "streaming" if stream else "blocking",
                            # Dify requires a user; new-api makes one per request when the client names none
                            "user": user or f"faregate-{uuid.uuid4().hex}",
                            "auto_generate_name": False}
    if files:
        body["files"] = files
    return body
