"""jsonutil.amended: a body with top-level keys added goes as its original bytes with the
keys spliced in; any other change is encoded afresh."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faregate import jsonutil


def test_added_keys_are_spliced_into_the_original_bytes() -> None:
    raw = b' \n{"model": "m",\n "messages": [1, 2]}\n'
    before = jsonutil.loads(raw)
    after = {**before, "max_tokens": 9, "n": None}
    out = jsonutil.amended(raw, before, after)
    assert out == b'{"max_tokens":9,"n":null,"model": "m",\n "messages": [1, 2]}\n'
    assert jsonutil.loads(out) == after


def test_an_empty_object_gets_no_stray_comma() -> None:
    assert jsonutil.amended(b"{ }", {}, {"a": 1}) == b'{"a":1 }'


@pytest.mark.parametrize("after", [
    {"model": "m"},  # a key dropped
    {"model": "other", "x": 1},  # a value changed
    {"model": "m", "messages": [1], "x": 1},  # a value rebuilt (equal, not the same object)
])
def test_other_changes_are_encoded_afresh(after: dict[str, Any]) -> None:
    raw = b'{"model": "m", "messages": [1]}'
    before = jsonutil.loads(raw)
    assert jsonutil.amended(raw, before, after) == json.dumps(after, separators=(",", ":")).encode()
