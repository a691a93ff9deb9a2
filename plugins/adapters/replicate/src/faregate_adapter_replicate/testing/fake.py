"""A fake Replicate API (``https://api.replicate.com``) on a loopback port: creating
predictions (``POST /v1/models/{owner}/{name}/predictions``, ``POST /v1/predictions`` with a
``version``), polling them (``GET /v1/predictions/{id}``), and serving their output files
(``GET /files/{name}``, where Replicate's ``replicate.delivery`` would).

* ``Authorization: Bearer <key>`` must match ``key`` when one is set (else 401, Replicate's
  problem details).
* Every creation is checked (:mod:`.schema`): the request's shape (a violation is a 400,
  recorded in :attr:`violations`; the ``fake_replicate`` fixture fails the test on one) and
  the model's inputs, as Replicate checks them (422 with ``invalid_fields``). A model the
  fake does not know is a 404.
* A prediction needs :attr:`polls_needed` polls before it succeeds (0: done within the
  creation's ``Prefer: wait``); without ``Prefer: wait`` it is always answered running.
  Creation answers 201 Created. :attr:`fail_with` (a message) makes the next prediction
  fail with it; :attr:`poll_errors` answers the next polls with those statuses. Each
  output is a real 1x1 PNG (:data:`PNG`) served by the fake; flux-1.1-pro answers one URL,
  flux-schnell a list of ``num_outputs`` of them."""

from __future__ import annotations

import itertools
import re
import secrets
from typing import Any

import orjson

from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_adapter_replicate.testing.png import PNG

__all__ = ["FLUX_PRO", "FLUX_SCHNELL", "PNG", "FakeReplicate"]

FLUX_PRO = "black-forest-labs/flux-1.1-pro"
FLUX_SCHNELL = "black-forest-labs/flux-schnell"
_MODEL_PATH = re.compile(r"/v1/models/([^/]+)/([^/]+)/predictions")
_PREDICTION_PATH = re.compile(r"/v1/predictions/([A-Za-z0-9]+)")
_FILE_PATH = re.compile(r"/files/([A-Za-z0-9._-]+)")
_TITLES = {400: "Bad request", 401: "Unauthenticated", 404: "Not found", 422: "Input validation failed",
           429: "Too many requests", 500: "Internal server error"}


class FakeReplicate(FakeServer):
    """Fake Replicate server. See the module docstring."""

    malformed_json = b'{"id": "x", "status": '

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, key: str | None = None,
                 validate_requests: bool = True) -> None:
        super().__init__(host, port, key=key, validate_requests=validate_requests)
        self.models = [FLUX_PRO, FLUX_SCHNELL]
        #: polls a prediction needs before it succeeds (0: done within Prefer: wait)
        self.polls_needed = 0
        #: when set, the next prediction fails with this error
        self.fail_with: str | None = None
        #: statuses the next polls are answered with (Replicate's error body), one a poll, before any answer
        self.poll_errors: list[int] = []
        #: prediction id → [the prediction, polls left]
        self.predictions: dict[str, list[Any]] = {}
        #: every output file served: name → bytes
        self.files: dict[str, bytes] = {}
        self._ids = itertools.count(1)

    def error_body(self, status: int, message: str | None = None) -> bytes:
        body: bytes = orjson.dumps({"title": _TITLES.get(status, "Error"), "detail": message or f"status {status}",
                                    "status": status})
        return body

    def schema_problem(self, request: Request) -> str | None:
        if request.method != "POST" or not (request.path == "/v1/predictions" or _MODEL_PATH.fullmatch(request.path)):
            return None
        from faregate_adapter_replicate.testing.schema import request_problem

        return request_problem(request.json)

    async def answer(self, request: Request, response: Response) -> None:
        file = _FILE_PATH.fullmatch(request.path)
        if request.method == "GET" and file is not None:  # output files need no key, as replicate.delivery
            content = self.files.get(file[1])
            if content is None:
                return response.send(404, b"not found", b"text/plain")
            return response.send(200, content, b"image/png")
        if self.key is not None and request.headers.get("authorization") != f"Bearer {self.key}":
            return response.send(401, self.error_body(401, "You did not pass a valid authentication token"))
        polled = _PREDICTION_PATH.fullmatch(request.path)
        if request.method == "GET" and polled is not None:
            return self._poll(polled[1], response)
        created = _MODEL_PATH.fullmatch(request.path)
        if request.method == "POST" and (created is not None or request.path == "/v1/predictions"):
            return self._create(request, response, f"{created[1]}/{created[2]}" if created else None)
        response.send(404, self.error_body(404, "Not found."))

    # ---- predictions ----------------------------------------------------------------------
    def _create(self, request: Request, response: Response, model: str | None) -> None:
        problem = self.check_request(request)
        if problem is not None:
            return response.send(400, self.error_body(400, problem))
        body = request.json
        if not isinstance(body, dict) or not isinstance(body.get("input"), dict):  # unchecked (validation off)
            return response.send(400, self.error_body(400, "input is required"))
        if model is None:  # /v1/predictions: the version names the model
            model = str(body.get("version", "")).partition(":")[0]
        if model not in self.models:
            return response.send(404, self.error_body(404, f"The requested model {model} was not found."))
        from faregate_adapter_replicate.testing.schema import input_problem

        invalid = input_problem(model, body["input"])
        if invalid:
            detail = "- " + "\n- ".join(f"{f['field']}: {f['description']}" for f in invalid)
            return response.send(422, orjson.dumps({"title": _TITLES[422], "detail": detail, "status": 422,
                                                    "invalid_fields": invalid}))
        ident = f"{secrets.token_hex(6)}{next(self._ids)}rp"
        prediction: dict[str, Any] = {
            "id": ident, "model": model, "version": "hidden", "input": body["input"], "logs": "", "output": None,
            "data_removed": False, "error": None, "status": "starting", "created_at": "2025-01-01T00:00:00.000Z",
            "urls": {"get": f"{self.base_url}/v1/predictions/{ident}",
                     "cancel": f"{self.base_url}/v1/predictions/{ident}/cancel",
                     "web": f"https://replicate.com/p/{ident}"}}
        self.predictions[ident] = [prediction, self.polls_needed]
        if request.headers.get("prefer", "").startswith("wait") and self.polls_needed == 0:
            self._finish(prediction)
        response.send(201, orjson.dumps(prediction))

    def _poll(self, ident: str, response: Response) -> None:
        if self.poll_errors:
            status = self.poll_errors.pop(0)
            return response.send(status, self.error_body(status))
        entry = self.predictions.get(ident)
        if entry is None:
            return response.send(404, self.error_body(404, "Not found."))
        prediction = entry[0]
        if prediction["status"] in ("starting", "processing"):
            entry[1] -= 1
            if entry[1] <= 0:
                self._finish(prediction)
            else:
                prediction["status"] = "processing"
        response.send(200, orjson.dumps(prediction))

    def _finish(self, prediction: dict[str, Any]) -> None:
        if self.fail_with is not None:
            prediction.update(status="failed", error=self.fail_with)
            self.fail_with = None
            return
        count = prediction["input"].get("num_outputs", 1) if prediction["model"] == FLUX_SCHNELL else 1
        extension = prediction["input"].get("output_format", "webp")
        urls = []
        for i in range(count):
            name = f"{prediction['id']}-{i}.{extension}"
            self.files[name] = PNG
            urls.append(f"{self.base_url}/files/{name}")
        prediction.update(status="succeeded", output=urls if prediction["model"] == FLUX_SCHNELL else urls[0],
                          completed_at="2025-01-01T00:00:02.000Z", metrics={"predict_time": 1.5})
