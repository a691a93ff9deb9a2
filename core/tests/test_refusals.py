"""Domain code refuses with a value (faregate.accounts.errors.Refused); the HTTP layer answers
it in new-api's envelope, at its status, with Retry-After when it has one (issue 27)."""

from __future__ import annotations

from quart import Quart, Response

from faregate import jsonutil
from faregate.accounts.errors import Refused, too_many
from faregate.management.common import guarded, refusal


def _app() -> Quart:
    app = Quart("refusals")

    @app.get("/limited")
    @guarded
    async def limited() -> Response:
        raise too_many("failed attempts", 7.9)

    @app.get("/closed")
    @guarded
    async def closed() -> Response:
        raise Refused("the user has been banned")

    return app


async def test_a_guarded_view_answers_a_raised_refusal_in_the_envelope() -> None:
    client = _app().test_client()
    limited = await client.get("/limited")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "7"
    assert jsonutil.loads(await limited.get_data()) == {
        "success": False, "message": "too many failed attempts; try again in 7 seconds"}
    closed = await client.get("/closed")
    assert closed.status_code == 200 and "Retry-After" not in closed.headers  # new-api: 200, success false
    assert jsonutil.loads(await closed.get_data()) == {"success": False, "message": "the user has been banned"}


async def test_a_503_refusal_keeps_its_retry_after() -> None:
    async with _app().app_context():
        answer = refusal(Refused("too many sign-ins are under way; try again in a minute", status=503, retry_after=60))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "60"
