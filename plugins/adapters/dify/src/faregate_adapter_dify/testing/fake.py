"""A fake Dify chat app (``https://api.dify.ai``) on a loopback port: ``POST
/v1/chat-messages``, blocking and streaming.

* ``Authorization: Bearer <key>`` (the app's key) must match ``key`` when one is set (else
  401 ``unauthorized``).
* Every body is validated against the shape Dify documents (:mod:`.schema`): a violation
  is answered as Dify answers one (400 ``invalid_param``) and recorded in
  :attr:`violations` (the ``fake_dify`` fixture fails the test on one).
* Conversations are kept: a request without ``conversation_id`` starts one (its id in the
  answer); one with an id continues it only for the ``user`` that began it (else 404
  ``Conversation Not Exists.``, as Dify). :attr:`conversations` holds each one's queries.
* The answer is :data:`REPLY_PREFIX` + the text after the query's last ``USER: `` label;
  a query holding "think" gets Dify's "Thinking..." block (:data:`THINKING_TEXT`) first.
  Usage (``metadata.usage``): a token a word of the query, a token a word of the answer.
* Streams: ``workflow_started``, a ``ping``, one ``message`` event a word, ``message_end``
  with the usage; the fault kind ``stream_error`` ends a stream with Dify's ``error``
  event after ``after_chunks`` events (``delay`` seconds after them, when given)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from faregate.testing import fake_server
from faregate.testing.fake_server import FakeServer, Request, Response

__all__ = ["APP_MODEL", "REPLY_PREFIX", "THINKING_BLOCK", "THINKING_TEXT", "FakeDify", "Fault", "words"]

APP_MODEL = "dify-app"  # what a channel calls the app (Dify itself never sees a model name)
REPLY_PREFIX = "Hello from fake-dify! You asked: "
THINKING_TEXT = "The user wants an answer."
#: how Dify's reasoning models open and close their thinking in the answer
THINKING_BLOCK = ('<details style="color:gray;background-color: #f8f8f8;padding: 8px;border-radius: 4px;" open> '
                  "<summary> Thinking... </summary>\n", "\n</details>\n\n")
_STATUS_CODES = {400: "invalid_param", 401: "unauthorized", 404: "not_found", 429: "too_many_requests",
                 500: "internal_server_error", 503: "service_unavailable"}


@dataclass
class Fault(fake_server.Fault):
    """The shared kinds plus ``stream_error`` (Dify's ``error`` event mid-stream)."""

    kinds: ClassVar[frozenset[str]] = fake_server.FAULT_KINDS | {"stream_error"}


def words(text: str) -> int:
    return len(text.split())


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


class FakeDify(FakeServer):
    """Fake Dify chat app. See the module docstring."""

    fault_type = Fault
    malformed_json = b'{"event": "message", "answer": '

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 validate_requests: bool = True) -> None:
        super().__init__(host, port, key=key, validate_requests=validate_requests)
        self.models = [APP_MODEL]
        #: conversation id → (its user, the queries it received)
        self.conversations: dict[str, tuple[str, list[str]]] = {}

    def error_body(self, status: int, message: str | None = None) -> bytes:
        body: bytes = orjson.dumps({"code": _STATUS_CODES.get(status, "internal_server_error"),
                                    "message": message or f"status {status}", "status": status})
        return body

    def schema_problem(self, request: Request) -> str | None:
        if (request.method, request.path) != ("POST", "/v1/chat-messages"):
            return None
        from faregate_adapter_dify.testing.schema import request_problem

        return request_problem(request.json)

    async def answer(self, request: Request, response: Response) -> None:
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return response.send(401, self.error_body(401, "Access token is invalid"))
        if (request.method, request.path) != ("POST", "/v1/chat-messages"):
            return response.send(404, self.error_body(404, "The requested URL was not found on the server."))
        problem = self.check_request(request)
        if problem is not None:
            return response.send(400, self.error_body(400, problem))
        body = request.json
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):  # unchecked (validation off)
            return response.send(400, self.error_body(400, "query is required"))
        user = str(body.get("user"))
        conversation = body.get("conversation_id")
        if conversation is None:
            conversation = str(uuid.uuid4())
            self.conversations[conversation] = (user, [])
        elif self.conversations.get(conversation, ("", []))[0] != user:
            return response.send(404, self.error_body(404, "Conversation Not Exists."))
        self.conversations[conversation][1].append(body["query"])
        answer = self._answer(body["query"])
        message_id = str(uuid.uuid4())
        common = {"task_id": str(uuid.uuid4()), "message_id": message_id, "conversation_id": conversation}
        usage = {"prompt_tokens": words(body["query"]), "prompt_unit_price": "0.001", "prompt_price_unit": "0.001",
                 "prompt_price": "0.0000", "completion_tokens": words(answer), "completion_unit_price": "0.002",
                 "completion_price_unit": "0.001", "completion_price": "0.0000",
                 "total_tokens": words(body["query"]) + words(answer), "total_price": "0.0000", "currency": "USD",
                 "latency": 0.5}
        metadata = {"usage": usage, "retriever_resources": []}
        if body.get("response_mode") != "streaming":
            return await response.reply(200, orjson.dumps({
                "event": "message", "id": message_id, **common, "mode": "chat", "answer": answer,
                "metadata": metadata, "created_at": int(time.time())}))
        events = [_sse({"event": "workflow_started", **common, "workflow_run_id": str(uuid.uuid4()),
                        "data": {"id": str(uuid.uuid4()), "workflow_id": str(uuid.uuid4())}}), b"event: ping\n\n"]
        pieces = [answer[: len(THINKING_BLOCK[0])]] if answer.startswith(THINKING_BLOCK[0]) else []
        pieces += [w + " " for w in answer[len("".join(pieces)):].split(" ")]
        pieces[-1] = pieces[-1][:-1]
        events += [_sse({"event": "message", **common, "answer": p, "created_at": int(time.time())}) for p in pieces]
        fault = response.fault
        if fault is not None and fault.kind == "stream_error":
            k = max(0, min(fault.after_chunks, len(events)))
            events = [*events[:k], _sse({"event": "error", **common, "status": 500, "code": "completion_request_error",
                                         "message": fault.message or "the model failed"})]
            if fault.delay:  # the text first, the error later: the client has seen text by then
                return await response.stream(events, pause=(len(events) - 1, fault.delay))
        else:
            events.append(_sse({"event": "message_end", "id": message_id, **common, "metadata": metadata}))
        await response.stream(events)

    @staticmethod
    def _answer(query: str) -> str:
        asked = query.rpartition("USER: \n")[2].strip()
        text = REPLY_PREFIX + asked
        if "think" in asked.lower():
            return THINKING_BLOCK[0] + THINKING_TEXT + THINKING_BLOCK[1] + text
        return text
