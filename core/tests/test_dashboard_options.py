"""new-api's data dashboard options (issue 28 item 4): ``DataExportEnabled`` turns the
dashboard's figures (``/api/data``, ``/api/data/self``, ``/api/data/users``) off and on again;
``DataExportInterval`` is known and checked (the figures are read live, so it changes nothing)."""

from __future__ import annotations

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer

HOUR = 1_700_000_000 - 1_700_000_000 % 3600
SPAN = {"start_timestamp": HOUR, "end_timestamp": HOUR + 3600}
PATHS = ("/api/data/", "/api/data/self", "/api/data/users")


async def test_the_dashboard_answers_only_while_it_is_on(gateway: GatewayServer, admin: AdminClient) -> None:
    await m.Log.create(user_id=admin.user_id, username="root", created_at=HOUR + 60, type=m.LOG_CONSUME,
                       model_name="gpt-4o", quota=10, prompt_tokens=1, completion_tokens=2)
    for path in PATHS:  # new-api's default: on
        assert (await admin.ok("GET", path, params=SPAN))[0]["quota"] == 10
    await admin.set_option("DataExportEnabled", False)
    for path in PATHS:
        assert await admin.call("GET", path, params=SPAN) == {
            "success": False, "message": "the data dashboard is turned off (DataExportEnabled)"}
    await admin.set_option("DataExportEnabled", True)
    for path in PATHS:  # nothing was lost meanwhile: the figures are the logs'
        assert (await admin.ok("GET", path, params=SPAN))[0]["quota"] == 10


async def test_the_data_export_options_are_checked_and_listed(admin: AdminClient) -> None:
    options = {o["key"]: o["value"] for o in await admin.ok("GET", "/api/option/")}
    assert (options["DataExportEnabled"], options["DataExportInterval"]) == ("true", "5")  # new-api's defaults
    for key, value in (("DataExportInterval", "0"), ("DataExportInterval", "five"), ("DataExportEnabled", "on!")):
        resp = await admin.call("PUT", "/api/option/", json={"key": key, "value": value})
        assert resp["success"] is False and key in resp["message"], (key, value)
    await admin.set_option("DataExportInterval", 1)
