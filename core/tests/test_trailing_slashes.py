"""Every route answers with and without a trailing slash, by the same view and without a
redirect (issue 28, item 2): new-api's router redirects ``/api/log/self/`` to
``/api/log/self`` (gin's RedirectTrailingSlash), and its web console calls some paths with
the slash (``/api/log/self/``, ``/api/data/self/``, ``DELETE /api/token/{id}/`` …) and
others without (``/api/prefill_group``, registered as ``/api/prefill_group/``)."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx

from faregate.testing.harness import AdminClient, GatewayServer

#: a rule's variable part: ``<name>`` or ``<converter(args):name>``
_VARIABLE = re.compile(r"<(?:(\w+)(?:\([^)]*\))?:)?(\w+)>")
_SAMPLES = {"int": "7", "path": "sample/part", "float": "1.5"}


def concrete(rule: str) -> str:
    """A path the rule matches: each variable filled with a sample of its converter."""
    return _VARIABLE.sub(lambda found: _SAMPLES.get(found[1] or "", "sample7"), rule)


def toggled(path: str) -> str:
    return path[:-1] if path.endswith("/") and path != "/" else path + "/"


async def test_every_route_answers_with_and_without_the_trailing_slash(gateway: GatewayServer) -> None:
    """Walk the app's url map: each route's path with a trailing slash added (or, for a route
    registered with one, removed) reaches the same view for each of its methods, with no
    redirect; ``/api/channel/`` and the other routes registered with the slash keep it. Where
    both spellings are routes of their own (new-api's ``/api/models``, a user's models, and
    ``/api/models/``, the admin's model list), each keeps its own view."""
    adapter = gateway.app.url_map.bind("localhost")
    rules = list(gateway.app.url_map.iter_rules())
    own = {(method, concrete(r.rule)): r.endpoint for r in rules for method in r.methods or {"GET"}}
    checked, strays = 0, []
    for rule in rules:
        path = concrete(rule.rule)
        for method in sorted((rule.methods or {"GET"}) - {"HEAD", "OPTIONS"}):
            endpoint, _ = adapter.match(path, method=method, websocket=rule.websocket)
            if endpoint != rule.endpoint:  # a sample value that is another route's literal
                continue
            other = toggled(path)
            expected = own.get((method, other), rule.endpoint)
            try:
                found, _ = adapter.match(other, method=method, websocket=rule.websocket)
            except Exception as exc:  # noqa: BLE001 - a 404, a 405 or a redirect: each a failure here
                strays.append(f"{method} {other}: {type(exc).__name__}")
                continue
            if found != expected:
                strays.append(f"{method} {other}: {found}, not {expected}")
            checked += 1
    assert strays == [], "\n".join(strays)
    assert checked > 200  # every route of the core and the installed plugins was walked


async def _user(gateway: GatewayServer, admin: AdminClient) -> httpx.AsyncClient:
    await admin.ok("POST", "/api/user/", json={"username": "slashy", "password": "slashy-password"})
    http = httpx.AsyncClient(base_url=gateway.base_url, timeout=30)
    body = (await http.post("/api/user/login", json={"username": "slashy", "password": "slashy-password"})).json()
    http.headers["New-Api-User"] = str(body["data"]["id"])
    return http


async def test_the_consoles_slashed_calls_answer_as_without_the_slash(gateway: GatewayServer,
                                                                     admin: AdminClient) -> None:
    """The calls of new-api's console that answered 404: a user's own logs and dashboard,
    and an admin's deletes and balance query by id."""
    user = await _user(gateway, admin)
    now = int(time.time())
    try:
        for path in ("/api/log/self", f"/api/data/self?start_timestamp={now - 3600}&end_timestamp={now}"):
            plain = (await user.get(path)).json()
            slashed = await user.get(path.replace("?", "/?") if "?" in path else path + "/")
            assert slashed.status_code == 200 and slashed.json() == plain and plain["success"], (path, plain)
    finally:
        await user.aclose()
    token: dict[str, Any] = await admin.ok("POST", "/api/token/", json={"name": "t", "expired_time": -1})
    assert await admin.ok("DELETE", f"/api/token/{token['id']}/") is None
    assert (await admin.call("GET", f"/api/token/{token['id']}"))["success"] is False  # deleted
    channel = await admin.add_channel(base_url="http://127.0.0.1:9", models="m1")
    balance = await admin.call("GET", f"/api/channel/update_balance/{channel}/")
    assert balance == await admin.call("GET", f"/api/channel/update_balance/{channel}")
    assert await admin.ok("DELETE", f"/api/channel/{channel}/") is None
    codes = await admin.ok("POST", "/api/redemption/", json={"name": "c", "quota": 10})
    code_id = (await admin.ok("GET", "/api/redemption/"))["items"][0]["id"]
    assert codes and await admin.ok("DELETE", f"/api/redemption/{code_id}/") is None
    # and the other way round: a route registered with the slash, called without it
    assert (await admin.ok("GET", "/api/channel"))["items"] == []
    redirected = await admin.http.get("/api/log/self/", headers={"New-Api-User": str(admin.user_id)})
    assert redirected.status_code == 200 and not redirected.history  # served, not redirected
