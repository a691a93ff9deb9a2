"""The request shape of Dify's ``POST /v1/chat-messages``, written from Dify's Service API
reference (Dify publishes no OpenAPI document) and its request parser: ``query``,
``inputs`` (an object) and ``user`` required; ``response_mode`` ``streaming`` or
``blocking``; ``conversation_id`` a UUID; ``files`` of ``{type, transfer_method, url |
upload_file_id}``; ``auto_generate_name`` a boolean. Other top-level fields are ignored by
Dify, so they are allowed here too."""

from __future__ import annotations

from typing import Any

import jsonschema

__all__ = ["CHAT_MESSAGES_REQUEST", "request_problem"]

_UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_FILE = {
    "type": "object",
    "required": ["type", "transfer_method"],
    "properties": {
        "type": {"enum": ["document", "image", "audio", "video", "custom"]},
        "transfer_method": {"enum": ["remote_url", "local_file"]},
        "url": {"type": "string", "minLength": 1},
        "upload_file_id": {"type": "string", "minLength": 1},
    },
    "allOf": [
        {"if": {"properties": {"transfer_method": {"const": "remote_url"}}}, "then": {"required": ["url"]}},
        {"if": {"properties": {"transfer_method": {"const": "local_file"}}}, "then": {"required": ["upload_file_id"]}},
    ],
    "additionalProperties": False,
}
CHAT_MESSAGES_REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["query", "inputs", "user"],
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "inputs": {"type": "object"},
        "user": {"type": "string", "minLength": 1},
        "response_mode": {"enum": ["streaming", "blocking"]},
        "conversation_id": {"type": "string", "pattern": _UUID},
        "files": {"type": "array", "items": _FILE},
        "auto_generate_name": {"type": "boolean"},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(CHAT_MESSAGES_REQUEST)


def request_problem(body: Any) -> str | None:
    """Why ``body`` is not a valid chat-messages request (``<json path>: <reason>``), None when it is."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(body))
    return None if error is None else f"{error.json_path}: {error.message}"
