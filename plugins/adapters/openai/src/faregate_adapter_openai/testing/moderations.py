"""The fake upstream's moderations: one result per input string (one for a list of
content parts, as OpenAI's omni models answer), flagged for ``violence`` when the text
holds the word "kill", every category of the spec present."""

from __future__ import annotations

from typing import Any

import orjson

CATEGORIES = ("hate", "hate/threatening", "harassment", "harassment/threatening", "illicit", "illicit/violent",
              "self-harm", "self-harm/intent", "self-harm/instructions", "sexual", "sexual/minors", "violence",
              "violence/graphic")


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if all(isinstance(v, str) for v in value):
        return list(value)
    return [" ".join(p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text")]


def result(text: str) -> dict[str, Any]:
    violent = "kill" in text.lower().split()
    categories = {c: c == "violence" and violent for c in CATEGORIES}
    return {"flagged": violent, "categories": categories,
            "category_scores": {c: 0.91 if categories[c] else 0.0001 for c in CATEGORIES},
            "category_applied_input_types": {c: ["text"] for c in CATEGORIES}}


def moderations_body(body: dict[str, Any], number: int) -> bytes:
    return orjson.dumps({"id": f"modr-fake{number}", "model": body.get("model") or "omni-moderation-latest",
                         "results": [result(t) for t in _texts(body["input"])]})
