"""Bodies as Vertex AI takes them, where it differs from the vendors' own APIs: a Claude
body carries ``anthropic_version: vertex-2023-10-16`` and no ``model`` (it is in the URL);
a Gemini body has no function-call ids (Vertex's ``FunctionCall`` and ``FunctionResponse``
have no ``id`` field and refuse one)."""

from __future__ import annotations

from typing import Any

from faregate_adapter_vertex.names import ANTHROPIC_VERSION

_CALLS = ("functionCall", "function_call", "functionResponse", "function_response")


def anthropic_body(body: dict[str, Any], stream: bool) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k != "model"}
    out["anthropic_version"] = ANTHROPIC_VERSION
    if stream:
        out["stream"] = True  # streamRawPredict wants it said
    else:
        out.pop("stream", None)
    return out


def without_call_ids(body: dict[str, Any]) -> dict[str, Any] | None:
    """``body`` without ids in its function calls and responses; None when it had none
    (the client's bytes then go as they came)."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not any(
            isinstance(part, dict) and any(isinstance(part.get(k), dict) and "id" in part[k] for k in _CALLS)
            for turn in contents if isinstance(turn, dict) for part in turn.get("parts") or []):
        return None
    turns = []
    for turn in contents:
        if isinstance(turn, dict) and isinstance(turn.get("parts"), list):
            parts = []
            for part in turn["parts"]:
                if isinstance(part, dict):
                    part = {k: ({n: v for n, v in value.items() if n != "id"}
                                if k in _CALLS and isinstance(value, dict) else value) for k, value in part.items()}
                parts.append(part)
            turn = {**turn, "parts": parts}
        turns.append(turn)
    return {**body, "contents": turns}
