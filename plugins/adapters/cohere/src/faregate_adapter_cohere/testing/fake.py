"""A fake Cohere API (``https://api.cohere.ai``) on a loopback port: ``POST /v2/chat``
(regular and SSE streams), ``POST /v2/rerank``, ``GET /v1/models``.

* ``Authorization: Bearer <key>`` must match ``key`` when one is set (else 401).
* Every ``/v2/chat`` and ``/v2/rerank`` body is validated against the request schema of
  Cohere's published OpenAPI document (:mod:`.schema`): a violation is answered 400 with
  Cohere's error body ``{"id", "message"}`` and recorded in :attr:`violations` (the
  ``fake_cohere`` fixture fails the test on one). Beyond the schema it refuses what Cohere
  refuses: no messages, a tool result answering no call of the turn before, a
  ``tool_choice`` without tools.
* The reply is :data:`REPLY_PREFIX` + the last user text, cut at a stop sequence
  (``STOP_SEQUENCE``) or at ``max_tokens`` words (``MAX_TOKENS``). With tools, and
  ``tool_choice: REQUIRED`` or "call tool" in the last user text, it plans and calls the
  first tool with :data:`TOOL_ARGUMENTS` (``TOOL_CALL``); after a tool result it answers
  :data:`TOOL_REPLY_PREFIX` + that result. ``thinking: {type: enabled}`` adds a thinking
  block first.
* Usage: ``billed_units`` count one token a word (input: every message's words),
  ``tokens`` add :data:`TEMPLATE_TOKENS` of Cohere's prompt template to the input, as the
  live API's raw counts do.
* Rerank scores a document by the share of the query's words it holds (ties keep the
  documents' order); ``meta.billed_units.search_units`` is 1, no tokens (as Cohere).

Faults: the shared kinds of :mod:`faregate.testing.fake_server`."""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any

import orjson

from faregate.testing.fake_server import FakeServer, Request, Response

__all__ = ["CHAT_MODEL", "DEFAULT_MODELS", "REPLY_PREFIX", "RERANK_MODEL", "TEMPLATE_TOKENS", "THINKING_PREFIX",
           "TOOL_ARGUMENTS", "TOOL_REPLY_PREFIX", "FakeCohere", "words"]

CHAT_MODEL = "command-a-03-2025"
RERANK_MODEL = "rerank-v3.5"
DEFAULT_MODELS = (CHAT_MODEL, "command-r-plus-08-2024", RERANK_MODEL)
REPLY_PREFIX = "Hello from fake-cohere! You said: "
TOOL_REPLY_PREFIX = "The tool said: "
THINKING_PREFIX = "Thinking about: "
TOOL_ARGUMENTS = {"city": "Paris"}
TEMPLATE_TOKENS = 7
_WORD = re.compile(r"[a-z0-9]+")
_MESSAGES = {401: "invalid api token", 404: "not found", 429: "You are using a Trial key, which is limited",
             500: "internal server error", 503: "service unavailable"}


class _BadInput(Exception):
    pass


def words(text: str) -> int:
    return len(text.split())


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _sse(payload: dict[str, Any]) -> bytes:
    kind = str(payload["type"])
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


class FakeCohere(FakeServer):
    """Fake Cohere server. See the module docstring."""

    malformed_json = b'{"id": "x", "message": {"role": "assistant", "content": ['

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 validate_requests: bool = True) -> None:
        super().__init__(host, port, key=key, validate_requests=validate_requests)
        self.models = list(DEFAULT_MODELS)
        self._ids = itertools.count(1)

    def error_body(self, status: int, message: str | None = None) -> bytes:
        body: bytes = orjson.dumps({"id": str(uuid.uuid4()), "message": message or _MESSAGES.get(status, "error")})
        return body

    def schema_problem(self, request: Request) -> str | None:
        if request.method != "POST":
            return None
        from faregate_adapter_cohere.testing.schema import chat_request_problem, rerank_request_problem

        if request.path == "/v2/chat":
            return chat_request_problem(request.json)
        if request.path == "/v2/rerank":
            return rerank_request_problem(request.json)
        return None

    # ---- routes ---------------------------------------------------------------------------
    async def answer(self, request: Request, response: Response) -> None:
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return response.send(401, self.error_body(401))
        route = (request.method, request.path)
        if route == ("GET", "/v1/models"):
            models = [{"name": m, "endpoints": ["rerank"] if m.startswith("rerank") else ["chat"],
                       "finetuned": False, "context_length": 128000} for m in self.models]
            return response.send(200, orjson.dumps({"models": models}))
        if route not in (("POST", "/v2/chat"), ("POST", "/v2/rerank")):
            return response.send(404, self.error_body(404, f"no route {request.method} {request.path}"))
        problem = self.check_request(request)
        if problem is not None:
            return response.send(400, self.error_body(400, f"invalid request: {problem}"))
        try:
            if request.path == "/v2/rerank":
                return await response.reply(200, orjson.dumps(self._rerank(request.json)))
            answer = self._chat(request.json)
        except _BadInput as exc:
            return response.send(400, self.error_body(400, f"invalid request: {exc}"))
        except (KeyError, TypeError, AttributeError, IndexError):  # unchecked bodies (validate_requests off)
            return response.send(400, self.error_body(400, "invalid request: malformed body"))
        if request.json.get("stream") is True:
            return await response.stream(self._events(answer))
        await response.reply(200, orjson.dumps(answer))

    # ---- chat -----------------------------------------------------------------------------
    def _chat(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        if not messages:
            raise _BadInput("messages: at least one message is required")
        calls: set[str] = set()
        for i, msg in enumerate(messages):
            if msg["role"] == "tool" and msg["tool_call_id"] not in calls:
                raise _BadInput(f"messages[{i}]: tool_call_id {msg['tool_call_id']!r} answers no tool call")
            if msg["role"] == "assistant":
                calls = {c["id"] for c in msg.get("tool_calls") or []}
        tools = body.get("tools") or []
        if body.get("tool_choice") and not tools:
            raise _BadInput("tool_choice requires tools")
        last = messages[-1]
        user_text = next((_text(m["content"]) for m in reversed(messages) if m["role"] == "user"), "")
        input_tokens = sum(words(_text(m.get("content"))) + 1 for m in messages)
        content: list[dict[str, Any]] = []
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            content.append({"type": "thinking", "thinking": THINKING_PREFIX + user_text})
        message: dict[str, Any] = {"role": "assistant"}
        wants_call = body.get("tool_choice") == "REQUIRED" or "call tool" in user_text.lower()
        if tools and last["role"] != "tool" and body.get("tool_choice") != "NONE" and wants_call:
            name = str((tools[0].get("function") or {}).get("name") or "tool")
            message["tool_plan"] = f"I will call {name}."
            message["tool_calls"] = [{"id": f"{name}_{self.id_prefix}{next(self._ids)}", "type": "function",
                                      "function": {"name": name, "arguments": orjson.dumps(TOOL_ARGUMENTS).decode()}}]
            reason = "TOOL_CALL"
            output = words(message["tool_plan"]) + len(TOOL_ARGUMENTS)
        else:
            text = (TOOL_REPLY_PREFIX + _text(last["content"])) if last["role"] == "tool" else REPLY_PREFIX + user_text
            reason = "COMPLETE"
            for stop in body.get("stop_sequences") or []:
                if stop and stop in text:
                    text, reason = text[:text.index(stop)], "STOP_SEQUENCE"
                    break
            limit = body.get("max_tokens")
            if isinstance(limit, int) and words(text) > limit:
                text, reason = " ".join(text.split()[:limit]), "MAX_TOKENS"
            content.append({"type": "text", "text": text})
            output = words(text)
        output += sum(words(c.get("thinking", "")) for c in content)
        if content:
            message["content"] = content
        usage = {"billed_units": {"input_tokens": input_tokens, "output_tokens": output},
                 "tokens": {"input_tokens": input_tokens + TEMPLATE_TOKENS, "output_tokens": output}}
        return {"id": str(uuid.uuid4()), "finish_reason": reason, "message": message, "usage": usage}

    @staticmethod
    def _events(answer: dict[str, Any]) -> list[bytes]:
        """The v2 stream of ``answer``: message-start, per block its start / deltas / end,
        the tool plan and calls, message-end with the finish reason and usage."""
        message = answer["message"]
        events = [_sse({"id": answer["id"], "type": "message-start", "delta": {"message": {
            "role": "assistant", "content": [], "tool_plan": "", "tool_calls": [], "citations": []}}})]
        for index, block in enumerate(message.get("content") or []):
            kind = block["type"]
            value = block[kind]
            events.append(_sse({"type": "content-start", "index": index,
                                "delta": {"message": {"content": {"type": kind, kind: ""}}}}))
            pieces = re.findall(r"\S+\s*", value) or [value]
            events += [_sse({"type": "content-delta", "index": index,
                             "delta": {"message": {"content": {kind: piece}}}}) for piece in pieces]
            events.append(_sse({"type": "content-end", "index": index}))
        plan = message.get("tool_plan")
        if plan:
            events += [_sse({"type": "tool-plan-delta", "delta": {"message": {"tool_plan": piece}}})
                       for piece in re.findall(r"\S+\s*", plan)]
        for index, call in enumerate(message.get("tool_calls") or []):
            arguments = call["function"]["arguments"]
            start = {"id": call["id"], "type": "function",
                     "function": {"name": call["function"]["name"], "arguments": ""}}
            events.append(_sse({"type": "tool-call-start", "index": index,
                                "delta": {"message": {"tool_calls": start}}}))
            half = len(arguments) // 2
            events += [_sse({"type": "tool-call-delta", "index": index,
                             "delta": {"message": {"tool_calls": {"function": {"arguments": part}}}}})
                       for part in (arguments[:half], arguments[half:])]
            events.append(_sse({"type": "tool-call-end", "index": index}))
        events.append(_sse({"type": "message-end", "id": answer["id"],
                            "delta": {"finish_reason": answer["finish_reason"], "usage": answer["usage"]}}))
        return events

    # ---- rerank ---------------------------------------------------------------------------
    @staticmethod
    def _rerank(body: dict[str, Any]) -> dict[str, Any]:
        query = set(_WORD.findall(body["query"].lower()))
        documents = body["documents"]

        def score(i: int) -> float:
            share = len(query & set(_WORD.findall(documents[i].lower()))) / len(query) if query else 0.0
            return round(0.05 + 0.9 * share - i * 1e-6, 6)

        ranked = sorted(range(len(documents)), key=lambda i: -score(i))[:body.get("top_n") or len(documents)]
        return {"id": str(uuid.uuid4()), "results": [{"index": i, "relevance_score": score(i)} for i in ranked],
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}}
