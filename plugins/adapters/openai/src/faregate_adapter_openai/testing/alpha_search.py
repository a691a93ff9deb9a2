"""The fake upstream's Codex standalone search (``POST /backend-api/codex/alpha/search``):
Codex's OAuth headers required (a bearer token and ``chatgpt-account-id``), the body
checked against the fields Codex documents (``model`` required, ``id``, ``stream``,
``max_output_tokens``; other fields allowed, as the protocol evolves), deterministic
results derived from the query text, answered in the shape Codex reads (its
``SearchResponse``: ``output`` text, ``encrypted_output`` optional; :data:`ANSWER_SCHEMA`)
with the results also listed one by one."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import orjson

from faregate.testing.fake_server import Request, Response
from faregate_adapter_openai.testing.errors import error_body

PATH = "/backend-api/codex/alpha/search"
REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["model"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "id": {"type": "string"},
        "stream": {"type": "boolean", "const": False},
        "max_output_tokens": {"type": "integer", "minimum": 1},
    },
}

#: the answer as Codex's client deserialises it (``codex-api``'s ``SearchResponse``: the
#: search's ``output`` text required, ``encrypted_output`` a string or null); other fields allowed
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["output"],
    "properties": {
        "output": {"type": "string"},
        "encrypted_output": {"type": ["string", "null"]},
    },
}


@functools.cache
def _validator() -> Any:
    # jsonschema comes with the testing extra: imported when a request is checked, so the fake
    # itself (``faregate dev fake-provider``, validation off) runs on a plain install
    import jsonschema

    return jsonschema.Draft202012Validator(REQUEST_SCHEMA)


def problem(body: Any) -> str | None:
    """Why ``body`` is not a search request Codex takes (None when it is)."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator().iter_errors(body))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(body)"
    return f"{where}: {error.message}"


def answer(request: Request, response: Response) -> None:
    """The search's answer, or the 400 / 401 Codex gives."""
    if not request.headers.get("chatgpt-account-id"):
        return response.send(401, error_body(401, "missing chatgpt-account-id", type="invalid_request_error",
                                             code="invalid_api_key"))
    query = orjson.dumps(request.json.get("query", "")) if isinstance(request.json, dict) else b""
    digest = hashlib.sha256(query).hexdigest()[:12]
    results = [{"title": f"Result {i} for {digest}", "url": f"https://example.com/{digest}/{i}",
                "snippet": "deterministic fake search result"} for i in range(3)]
    output = "\n\n".join(f"{r['title']}\n{r['url']}\n{r['snippet']}" for r in results)
    response.send(200, orjson.dumps({"id": f"search_{digest}", "object": "search.result",
                                     "model": request.json["model"], "output": output, "encrypted_output": None,
                                     "results": results}))
