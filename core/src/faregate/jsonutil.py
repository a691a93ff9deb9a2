"""JSON in one place: orjson everywhere (bytes in, bytes out)."""

from __future__ import annotations

from typing import Any

import orjson

JSONDecodeError = orjson.JSONDecodeError


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def dumps_str(value: Any) -> str:
    return orjson.dumps(value).decode()


#: orjson's own (bytes, bytearray, memoryview or str in): no call of ours around it, as
#: every streamed event goes through it
loads = orjson.loads


def amended(raw: bytes, before: dict[str, Any], after: dict[str, Any]) -> bytes:
    """``after`` encoded, where ``raw`` is ``before``'s encoding (a JSON object): when ``after``
    only adds top-level keys to ``before`` (every other value the very same object), those keys
    are spliced in after ``raw``'s opening brace and the rest of ``raw`` kept as it came (no
    re-encoding of a client's body); otherwise ``after`` is encoded afresh."""
    added = after.keys() - before.keys()
    head = raw.lstrip()
    if (not added or len(after) != len(before) + len(added) or not head.startswith(b"{")
            or any(after.get(k, _MISSING) is not v for k, v in before.items())):
        return orjson.dumps(after)
    rest = head[1:]
    spliced = b",".join(orjson.dumps(k) + b":" + orjson.dumps(after[k]) for k in after if k in added)
    return b"{" + spliced + (b"" if rest.lstrip().startswith(b"}") else b",") + rest


_MISSING = object()
