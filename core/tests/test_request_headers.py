"""The request headers the edge builds answer like werkzeug's, but a lookup of an absent
name (most of the gateway's: optional SDK, proxy and cookie headers) builds no
``BadRequestKeyError`` on the way; ``headers[name]`` of an absent name still raises it
(a 400 in a view, as in Flask and Quart)."""

from __future__ import annotations

import pytest
from werkzeug.datastructures import Headers
from werkzeug.exceptions import BadRequestKeyError

from faregate.edge.connection import RequestHeaders

PAIRS = [("Host", "gw"), ("Content-Length", "12"), ("X-Api-Key", "k"), ("X-Api-Key", "second")]


@pytest.fixture
def raised(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    made: list[str] = []
    init = BadRequestKeyError.__init__

    def counting(self: BadRequestKeyError, *args: object, **kwargs: object) -> None:
        made.append(str(args[:1]))
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(BadRequestKeyError, "__init__", counting)
    return made


def _made(cls: type[Headers]) -> Headers:
    headers = cls()
    for name, value in PAIRS:
        headers.add(name, value)
    return headers


def test_absent_names_are_looked_up_without_an_exception(raised: list[str]) -> None:
    headers = _made(RequestHeaders)
    assert headers.get("cookie") is None and headers.get("x-request-id", "none") == "none"
    assert "cookie" not in headers and "transfer-encoding" not in headers
    assert raised == []


def test_lookups_answer_as_werkzeugs() -> None:
    ours, theirs = _made(RequestHeaders), _made(Headers)
    for name in ("host", "HOST", "content-length", "x-api-key", "cookie", "x-request-id"):
        assert ours.get(name) == theirs.get(name)
        assert ours.get(name, "default") == theirs.get(name, "default")
        assert ours.get(name, type=str.upper) == theirs.get(name, type=str.upper)
        assert (name in ours) == (name in theirs)
    assert ours.get("content-length", type=int) == 12
    assert ours["x-api-key"] == "k" and ours.getlist("x-api-key") == ["k", "second"]
    with pytest.raises(BadRequestKeyError):
        ours["cookie"]
