"""A fake Jina AI server (``https://api.jina.ai``) on a loopback port: ``POST /v1/rerank``
(:mod:`.rerank` answers it) and ``POST /v1/embeddings`` (the fake OpenAI's vectors, see
:mod:`.embeddings`), ``Authorization: Bearer <key>`` required when a key is set.

Every request body is validated against the shape Jina documents
(:data:`~.rerank.RERANK_REQUEST`, :data:`~.rerank.EMBEDDINGS_REQUEST`): a violation is
answered as Jina's FastAPI service answers it (422 ``{"detail": [{"loc", "msg", "type"}]}``)
and recorded in :attr:`violations` (the ``fake_jina`` fixture fails the test on one).
Errors are ``{"detail": "<message>"}``. :attr:`send_usage` false: answers carry no usage
(as some Jina-compatible servers do). The shared faults of
:mod:`faregate.testing.fake_server` apply."""

from __future__ import annotations

from typing import Any

import orjson

from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_adapter_openai.testing.embeddings import embeddings_body
from faregate_adapter_openai.testing.rerank import EMBEDDINGS_REQUEST, RERANK_REQUEST, request_problem, rerank_body

__all__ = ["FakeJina"]

SCHEMAS = {"/v1/rerank": RERANK_REQUEST, "/v1/embeddings": EMBEDDINGS_REQUEST}


class FakeJina(FakeServer):
    """Fake Jina server. See the module docstring."""

    malformed_json = b'{"model": "x", "results": ['

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 validate_requests: bool = True) -> None:
        super().__init__(host, port, key=key, validate_requests=validate_requests)
        self.send_usage = True
        #: what ``faregate dev fake-provider jina`` offers for a channel (any model is answered)
        self.models = ["jina-reranker-v2-base-multilingual", "jina-embeddings-v3"]

    def error_body(self, status: int, message: str | None = None) -> bytes:
        body: bytes = orjson.dumps({"detail": message or f"upstream answered {status}"})
        return body

    def schema_problem(self, request: Request) -> str | None:
        schema = SCHEMAS.get(request.path)
        return None if schema is None or request.method != "POST" else request_problem(schema, request.json)

    async def answer(self, request: Request, response: Response) -> None:
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return response.send(401, self.error_body(401, "Unauthorized: invalid or missing API key"))
        if request.method != "POST" or request.path not in SCHEMAS:
            return response.send(404, self.error_body(404, "Not Found"))
        problem = self.check_request(request)
        if problem is not None:
            detail: list[dict[str, Any]] = [{"loc": ["body"], "msg": problem, "type": "value_error"}]
            return response.send(422, orjson.dumps({"detail": detail}))
        if request.path == "/v1/rerank":
            return await response.reply(200, rerank_body(request.json, with_usage=self.send_usage))
        answer = orjson.loads(embeddings_body(request.json))
        if not self.send_usage:
            del answer["usage"]
        await response.reply(200, orjson.dumps(answer))
