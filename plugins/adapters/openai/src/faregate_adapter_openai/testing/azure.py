"""A fake Azure OpenAI resource: the fake OpenAI's answers (same request schemas, same
bodies) at Azure's addresses, with Azure's key and version rules.

* ``POST /openai/deployments/{deployment}/{chat/completions | completions | embeddings |
  images/generations | images/edits | audio/transcriptions | audio/translations |
  audio/speech}?api-version=…``;
* ``POST /openai/v1/responses[/compact]?api-version=…`` and ``/openai/responses[/compact]``
  (an AI Foundry resource's form);
* ``GET /openai/v1/realtime?model=<deployment>`` upgraded to the realtime WebSocket of the GA
  protocol (the v1 API: no ``api-version``), and ``GET /openai/realtime?api-version=…&deployment=…``
  to one of the preview (beta) protocol, the only one Azure speaks there: a GA client's session
  there is refused as Azure refuses it (``Unknown parameter: 'session.type'.``) and recorded as
  a violation, a beta client's on the v1 path fails OpenAI's GA schemas.

A JSON body needs no ``model`` (the deployment is it). The key goes in ``api-key``
(``Authorization: Bearer`` is Entra ID's, not a key's: refused as Azure refuses a wrong key, 401
with Azure's message); a request without ``api-version`` (but on the v1 realtime path), or to a
path Azure does not serve, is Azure's 404 ``Resource not found``; a deployment not in
:attr:`FakeAzure.deployments` (when that is set) is its 404 ``DeploymentNotFound``. Errors are
Azure's ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import re

import orjson

from faregate.testing.fake_server import Request, Response
from faregate_adapter_openai.testing import realtime
from faregate_adapter_openai.testing.server import FakeOpenAI

__all__ = ["FakeAzure", "azure_error"]

#: the deployment routes: what follows ``/openai/deployments/{name}`` → OpenAI's path
_TASKS = frozenset({"chat/completions", "completions", "embeddings", "images/generations", "images/edits",
                    "audio/transcriptions", "audio/translations", "audio/speech"})
_DEPLOYMENT = re.compile(r"^/openai/deployments/(?P<name>[^/]+)/(?P<task>.+)$")
_RESPONSES = re.compile(r"^/openai(/v1)?/responses(?P<compact>/compact)?$")
ACCESS_DENIED = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid "
                 "key for an active subscription and use a correct regional API endpoint for your resource.")
NO_DEPLOYMENT = ("The API deployment for this resource does not exist. If you created the deployment within the "
                 "last 5 minutes, please wait a moment and try again.")


def azure_error(code: str, message: str) -> bytes:
    body: bytes = orjson.dumps({"error": {"code": code, "message": message}})
    return body


class FakeAzure(FakeOpenAI):
    """Fake Azure OpenAI resource. See the module docstring."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, api_key: str | None = None,
                 key: str | None = None, latency: float = 0.0, validate_requests: bool = True) -> None:
        super().__init__(host, port, api_key=api_key, key=key, latency=latency, validate_requests=validate_requests)
        #: the deployments that exist (None: any name is one)
        self.deployments: set[str] | None = None
        #: what ``faregate dev fake-provider azure`` offers for a channel (deployment names)
        self.models = ["gpt-4o", "gpt-4o-mini", "text-embedding-3-small"]

    def error_body(self, status: int, message: str | None = None) -> bytes:
        return azure_error(str(status), message or f"upstream answered {status}")

    async def answer(self, request: Request, response: Response) -> None:
        if self.key is not None and request.headers.get("api-key") != self.key:
            return response.send(401, azure_error("401", ACCESS_DENIED))
        if request.path == "/openai/v1/realtime" and request.method == "GET":  # the v1 API: no api-version
            return await self.realtime_session(request, response, request.query.get("model", ""), beta=False)
        if not request.query.get("api-version"):
            return response.send(404, azure_error("404", "Resource not found"))
        deployment = _DEPLOYMENT.match(request.path)
        if deployment is not None and deployment["task"] in _TASKS and request.method == "POST":
            if self.deployments is not None and deployment["name"] not in self.deployments:
                return response.send(404, azure_error("DeploymentNotFound", NO_DEPLOYMENT))
            request.path = "/v1/" + deployment["task"]
            if isinstance(request.json, dict) and "model" not in request.json:
                # the deployment is the model: Azure needs none in the body (OpenAI's schemas do)
                request.json = {**request.json, "model": deployment["name"]}
            return await self.route(request, response)
        responses = _RESPONSES.match(request.path)
        if responses is not None and request.method == "POST":
            request.path = "/v1/responses" + (responses["compact"] or "")
            return await self.route(request, response)
        if request.path == "/openai/realtime" and request.method == "GET":
            return await self.realtime_session(request, response, request.query.get("deployment", ""), beta=True)
        response.send(404, azure_error("404", "Resource not found"))

    async def realtime_session(self, request: Request, response: Response, deployment: str, *, beta: bool) -> None:
        if not deployment or (self.deployments is not None and deployment not in self.deployments):
            return response.send(404, azure_error("DeploymentNotFound", NO_DEPLOYMENT))
        await realtime.answer(self, request, response, model=deployment, beta=beta)
