"""Unit tests of the provider's pure functions: no gateway, no network, milliseconds."""

from __future__ import annotations

import json

import pytest

from faregate.api import (
    ChatRequest,
    GatewayError,
    Message,
    StreamStop,
    TextDelta,
    TextPart,
    UpstreamTarget,
    Usage,
    UsageEvent,
)
from faregate_adapter_echo.provider import EchoProvider


def target(stream: bool = False) -> UpstreamTarget:
    return UpstreamTarget(base_url="http://echo.test/", key="k", model="echo-1", stream=stream, channel_type=9001)


def request(*texts: tuple[str, str], max_tokens: int | None = None) -> ChatRequest:
    return ChatRequest(model="echo-1", messages=[Message(role, [TextPart(t)]) for role, t in texts],  # type: ignore[arg-type]
                       max_tokens=max_tokens)


def test_build_request_sends_the_last_user_text() -> None:
    req = EchoProvider().build_request(request(("system", "be brief"), ("user", "one"), ("assistant", "one"),
                                               ("user", "two")), target(stream=True))
    assert (req.method, req.url) == ("POST", "http://echo.test/echo")
    assert req.headers["X-Echo-Key"] == "k"
    assert json.loads(req.body or b"") == {"model": "echo-1", "prompt": "two", "max_tokens": None, "stream": True}


def test_build_request_needs_a_user_message() -> None:
    with pytest.raises(GatewayError) as caught:
        EchoProvider().build_request(request(("system", "alone")), target())
    assert caught.value.status == 400


def test_parse_response() -> None:
    resp = EchoProvider().parse_response(b'{"text": "a b", "tokens_in": 2, "tokens_out": 2, "done_reason": "length"}')
    assert resp.message.text() == "a b"
    assert resp.stop_reason == "length"
    assert resp.usage == Usage(input_tokens=2, output_tokens=2)


def test_malformed_response_is_a_502() -> None:
    with pytest.raises(GatewayError) as caught:
        EchoProvider().parse_response(b"<html>")
    assert (caught.value.status, caught.value.code) == (502, "bad_response_body")


def test_stream_parser() -> None:
    parser = EchoProvider().stream_parser()
    assert parser.feed(None, b'{"delta": "hi"}') == [TextDelta(index=0, text="hi")]
    assert not parser.done
    assert parser.feed(None, b'{"done_reason": "stop", "tokens_in": 1, "tokens_out": 1}') == [
        StreamStop(stop_reason="stop"), UsageEvent(usage=Usage(input_tokens=1, output_tokens=1))]
    assert parser.done


def test_parse_error() -> None:
    err = EchoProvider().parse_error(503, b'{"problem": "overloaded"}')
    assert (err.status, err.message, err.upstream) == (503, "overloaded", True)
    assert EchoProvider().parse_error(502, b"<html>").message == "echo upstream answered 502"
