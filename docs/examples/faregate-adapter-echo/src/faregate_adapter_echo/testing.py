"""A fake echo upstream for tests: an HTTP/1.1 server on a loopback port.

It speaks the echo protocol (see :mod:`faregate_adapter_echo.provider`): it answers
with the prompt's words, at most ``max_tokens`` of them, and counts one token per
word. Usage::

    async with FakeEcho(key="echo-key") as echo:
        ...  # add a channel of type 9001 with base_url=echo.base_url, key="echo-key"
        echo.fail_next(429, "echo is tired")  # the next request gets this error
        echo.requests[-1]["json"]  # what the gateway sent

It is built on the core's :class:`~faregate.testing.fake_server.FakeServer`, which does
the HTTP, records the requests and injects faults: a fake only says how its vendor
answers (:meth:`FakeEcho.answer`) and what its errors look like
(:meth:`FakeEcho.error_body`).
"""

from __future__ import annotations

import json
from typing import Any

from faregate.testing.fake_server import FakeServer, Request, Response

__all__ = ["FakeEcho", "echo_reply"]


def echo_reply(prompt: str, max_tokens: int | None) -> tuple[list[str], int, str]:
    """The echo rule: (output words, tokens_in, done_reason)."""
    words = prompt.split()
    if max_tokens is not None and len(words) > max_tokens:
        return words[:max_tokens], len(words), "length"
    return words, len(words), "stop"


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


class FakeEcho(FakeServer):
    def __init__(self, *, key: str | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        # when ``key`` is set, requests must carry ``X-Echo-Key: <key>``
        super().__init__(host, port, key=key)

    def fail_next(self, status: int, problem: str) -> None:
        """Answer the next request with ``status`` and ``{"problem": problem}``."""
        super().fail_next(status, problem)

    def error_body(self, status: int, message: str | None = None) -> bytes:
        return _json({"problem": message or f"status {status}"})

    async def answer(self, request: Request, response: Response) -> None:
        if request.method != "POST" or request.path != "/echo":
            return response.send(404, self.error_body(404, f"no route {request.method} {request.path}"))
        if self.key is not None and request.headers.get("x-echo-key") != self.key:
            return response.send(401, self.error_body(401, "wrong or missing X-Echo-Key"))
        body = request.json
        if (not isinstance(body, dict) or not isinstance(body.get("model"), str)
                or not isinstance(body.get("prompt"), str) or not isinstance(body.get("stream"), bool)):
            return response.send(400, self.error_body(400, "expected {model, prompt, max_tokens, stream}"))
        words, tokens_in, done_reason = echo_reply(body["prompt"], body.get("max_tokens"))
        if not body["stream"]:
            return await response.reply(200, _json({"text": " ".join(words), "tokens_in": tokens_in,
                                                    "tokens_out": len(words), "done_reason": done_reason}))
        events: list[dict[str, Any]] = [{"delta": word if i == 0 else " " + word} for i, word in enumerate(words)]
        events.append({"done_reason": done_reason, "tokens_in": tokens_in, "tokens_out": len(words)})
        # one HTTP chunk per event, flushed one by one: the gateway sees them as they come
        await response.stream([b"data: " + _json(event) + b"\n\n" for event in events], b"text/event-stream",
                              pace=True)
