"""FakeEcho: an echo upstream for tests, on the core's FakeServer (which does the HTTP,
records ``requests`` and injects faults: ``fail_next(429, "tired")``). It answers with
the prompt's words, at most ``max_tokens`` of them, one token per word."""

from __future__ import annotations

from typing import Any

from faregate.api import json_dumps
from faregate.testing.fake_server import FakeServer, Request, Response


class FakeEcho(FakeServer):
    def error_body(self, status: int, message: str | None = None) -> bytes:
        return json_dumps({"problem": message or f"status {status}"})

    async def answer(self, request: Request, response: Response) -> None:
        if request.method != "POST" or request.path != "/echo":
            return response.send(404, self.error_body(404, f"no route {request.method} {request.path}"))
        if self.key is not None and request.headers.get("x-echo-key") != self.key:
            return response.send(401, self.error_body(401, "wrong or missing X-Echo-Key"))
        body = request.json  # reject what a real echo server would
        if (not isinstance(body, dict) or not isinstance(body.get("model"), str)
                or not isinstance(body.get("prompt"), str) or not isinstance(body.get("stream"), bool)
                or not isinstance(body.get("max_tokens"), int | None)):
            return response.send(400, self.error_body(400, "expected {model, prompt, max_tokens, stream}"))
        words, limit = body["prompt"].split(), body["max_tokens"]
        done = {"done_reason": "length" if limit is not None and len(words) > limit else "stop",
                "tokens_in": len(words)}
        words = words[:limit] if limit is not None else words
        done["tokens_out"] = len(words)
        if not body["stream"]:
            return await response.reply(200, json_dumps({"text": " ".join(words), **done}))
        events: list[dict[str, Any]] = [{"delta": w if i == 0 else " " + w} for i, w in enumerate(words)]
        await response.stream([b"data: " + json_dumps(e) + b"\n\n" for e in [*events, done]], pace=True)
