"""The model lists of the native format: ``GET /v1beta/models`` (and ``GET /v1/models``
when the caller uses Gemini's key header or ``?key=``) in Gemini's shape with its paging
(``pageSize``, ``pageToken`` → ``nextPageToken``), one model (``GET .../models/{model}``),
and ``GET /v1beta/openai/models`` in the chat-completions shape."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from faregate.api import ModelInfo, bad_request

#: Gemini's ListModels paging: 50 a page unless asked, at most 1000
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_TOKEN_LENGTH = 1024
#: what a caller may do with a model through the gateway's native routes
METHODS = ["generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"]


def render_model(model: ModelInfo) -> dict[str, Any]:
    """A ``Model``: token limits and sampling defaults are not known for a model behind the
    gateway (its channel may be any vendor), so, as proto3 does for unset fields, they are
    left out."""
    return {"name": f"models/{model.id}", "baseModelId": model.id, "displayName": model.id,
            "supportedGenerationMethods": list(METHODS)}


def _page_size(query: Mapping[str, str]) -> int:
    raw = query.get("pageSize") or query.get("page_size") or ""
    if not raw:
        return DEFAULT_PAGE_SIZE
    try:
        size = int(raw)
    except ValueError:
        size = -1
    if size < 0:
        raise bad_request("pageSize must be a non-negative integer", param="pageSize")
    return min(size, MAX_PAGE_SIZE) or DEFAULT_PAGE_SIZE  # 0 is "unset", more than 1000 is 1000


def page_token(model_id: str) -> str:
    """The opaque token of the page after ``model_id``."""
    return base64.urlsafe_b64encode(model_id.encode()).decode().rstrip("=")


def _after(query: Mapping[str, str]) -> str | None:
    token = query.get("pageToken") or query.get("page_token") or ""
    if not token:
        return None
    try:
        if len(token) > MAX_TOKEN_LENGTH:
            raise ValueError
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, binascii.Error):
        raise bad_request("pageToken is not a token this list gave", param="pageToken") from None


def page(models: list[ModelInfo], query: Mapping[str, str]) -> tuple[list[ModelInfo], str]:
    """One page and the token of the next (``""`` on the last page). A token naming a
    model no longer listed gives an empty last page."""
    size = _page_size(query)
    after = _after(query)
    start = 0
    if after is not None:
        ids = [m.id for m in models]
        if after not in ids:
            return [], ""
        start = ids.index(after) + 1
    chunk = models[start:start + size]
    more = start + size < len(models)
    return chunk, page_token(chunk[-1].id) if more and chunk else ""


def render_native_list(models: list[ModelInfo], query: Mapping[str, str]) -> dict[str, Any]:
    chunk, token = page(models, query)
    # nextPageToken is always present (the spec lists it), empty on the last page
    return {"models": [render_model(m) for m in chunk], "nextPageToken": token}


def render_openai_list(models: list[ModelInfo]) -> dict[str, Any]:
    """The chat-completions list new-api serves under the native namespace."""
    return {"success": True, "object": "list",
            "data": [{"id": m.id, "object": "model", "created": m.created, "owned_by": m.owned_by} for m in models]}
