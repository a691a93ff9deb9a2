"""OpenAI paths new-api answers with 501 (files, fine-tunes, image variations, deleting a
model): the same answer here, after the key is checked (as new-api's token middleware
does), instead of a 404 that reads as a wrong base URL."""

from __future__ import annotations

from faregate.api import Exchange, GatewayError, Outcome, Route

KIND = "not_implemented"

ROUTES = [
    Route("POST", "/v1/images/variations", kind=KIND),
    Route("GET", "/v1/files", kind=KIND),
    Route("POST", "/v1/files", kind=KIND),
    Route("GET", "/v1/files/{file_id}", kind=KIND),
    Route("DELETE", "/v1/files/{file_id}", kind=KIND),
    Route("GET", "/v1/files/{file_id}/content", kind=KIND),
    Route("GET", "/v1/fine-tunes", kind=KIND),
    Route("POST", "/v1/fine-tunes", kind=KIND),
    Route("GET", "/v1/fine-tunes/{job_id}", kind=KIND),
    Route("POST", "/v1/fine-tunes/{job_id}/cancel", kind=KIND),
    Route("GET", "/v1/fine-tunes/{job_id}/events", kind=KIND),
    Route("DELETE", "/v1/models/{model}", kind=KIND),
]


class NotImplementedDriver:
    kind = KIND

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        raise GatewayError(501, "API not implemented", type="new_api_error", code="api_not_implemented")
