"""JSON in one place: orjson everywhere (bytes in, bytes out)."""

from __future__ import annotations

from typing import Any

import orjson

JSONDecodeError = orjson.JSONDecodeError


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def dumps_str(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    return orjson.loads(data)
