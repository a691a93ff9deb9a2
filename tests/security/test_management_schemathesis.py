"""schemathesis runs every operation of the management API's OpenAPI document with
generated input against a running gateway, as root (issue 10): never a 5xx, and every
answer conforms to the document: its status and media type are listed, and its body
validates against the schema listed for them (the declared data shape, or the bare
envelope for a route that declares none; a failure is the envelope with success false)."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from faregate.testing.harness import AdminClient, GatewayServer, free_port

#: FAREGATE_FUZZ_EXAMPLES=200 explores with fresh random cases; by default CI runs the same
#: derandomized cases every time, so a red run is reproducible
EXPLORE = int(os.environ.get("FAREGATE_FUZZ_EXAMPLES", "0"))
EXAMPLES = EXPLORE or 8
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _check(operation: Any, base_url: str, headers: dict[str, str], problems: list[str]) -> None:
    method = operation.method.upper()

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=not EXPLORE,
              suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def check(case: Any) -> None:
        response = case.call(base_url=base_url, headers=headers)
        problems.append("")  # counts the call; empty entries are dropped below
        try:
            case.validate_response(response, checks=CHECKS, headers=headers)
        except FailureGroup as group:
            for failure in group.exceptions:
                problems.append(f"{method} {case.formatted_path} -> {response.status_code}: {failure.title}: "
                                f"{str(failure.message)[:300]}")

    check()


def _run(base_url: str, headers: dict[str, str]) -> list[str]:
    schema = schemathesis.openapi.from_url(base_url + "/api/openapi.json")
    problems: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operations += 1
        _check(result.ok(), base_url, headers, problems)
    assert operations > 40, "the document lists the management API"
    calls = problems.count("")
    assert calls >= operations, f"only {calls} calls for {operations} operations"
    return sorted({p for p in problems if p})


async def test_every_management_operation_survives_generated_input(gateway: GatewayServer,
                                                                   admin: AdminClient) -> None:
    # outbound fetches (model metadata sync, uptime pages) go to a closed local port, never the internet
    closed = f"http://127.0.0.1:{free_port()}"
    await admin.set_option("SyncUpstreamBase", closed)
    await admin.set_option("console_setting.uptime_kuma_groups",
                           [{"categoryName": "fuzz", "url": closed, "slug": "fuzz"}])
    cookies = "; ".join(f"{k}={v}" for k, v in admin.http.cookies.items())
    headers = {"Cookie": cookies, "New-Api-User": str(admin.user_id)}
    # schemathesis calls are blocking: run them beside the gateway's event loop
    problems = await asyncio.to_thread(_run, gateway.base_url, headers)
    assert problems == [], "\n".join(problems)
