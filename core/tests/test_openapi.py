"""The management API describes itself (issue 10): every /api route is in the OpenAPI
document, declared bodies are validated on the way in (400 in the envelope naming each
field), and every answer conforms to the document: a route missing from it, a status or
media type it does not list, or a field its data shape does not declare fails here."""

from __future__ import annotations

import re
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer

PARAM = re.compile(r"<(?:[a-z]+:)?([a-z_]+)>")


def undocumented(app: Any, doc: dict[str, Any]) -> list[str]:
    """The app's /api routes (method and path) that the document does not list."""
    missing = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/") or rule.rule == "/api/openapi.json" or rule.rule.startswith("/api/docs"):
            continue
        path = PARAM.sub(r"{\1}", rule.rule)
        for method in (rule.methods or set()) - {"HEAD", "OPTIONS"}:
            if method.lower() not in doc["paths"].get(path, {}):
                missing.append(f"{method} {path}")
    return sorted(missing)


def operation(doc: dict[str, Any], method: str, path: str) -> dict[str, Any] | None:
    """The documented operation a concrete request path falls under; a literal segment
    wins over a parameter (``/api/user/self`` is not ``/api/user/{user_id}``)."""
    candidates = []
    for template, operations in doc["paths"].items():
        pattern = "".join(r"[^/]+" if part.startswith("{") else re.escape(part)
                          for part in re.split(r"(\{[^}]+\})", template))
        if re.fullmatch(pattern, path) and method.lower() in operations:
            candidates.append((template.count("{"), operations[method.lower()]))
    return min(candidates, key=lambda c: c[0])[1] if candidates else None


def violations(doc: dict[str, Any], method: str, path: str, status: int, content_type: str,
               body: Any) -> list[str]:
    """How an answer strays from the document (empty when it conforms)."""
    where = f"{method} {path} -> {status}"
    found = operation(doc, method, path)
    if found is None:
        return [f"{where}: the operation is not in the document"]
    answer = found["responses"].get(str(status)) or found["responses"].get("default")
    if answer is None:
        return [f"{where}: status not documented ({sorted(found['responses'])})"]
    media = content_type.split(";")[0].strip()
    content = answer.get("content", {})
    if media not in content:
        return [f"{where}: answers {media!r}, documented {sorted(content)}"]
    schema = content[media].get("schema")
    if schema is None or media != "application/json":
        return []
    # the component schemas ride along so "#/components/schemas/..." resolves
    validator = Draft202012Validator({**schema, "components": doc["components"]})
    error = best_match(validator.iter_errors(body))
    return [] if error is None else [f"{where}: {error.message} at {list(error.absolute_path)}"]


async def document(base_url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url) as http:
        doc: dict[str, Any] = (await http.get("/api/openapi.json")).json()
        assert (await http.get("/api/docs")).status_code == 200
    return doc


async def test_every_management_route_is_documented(gateway: GatewayServer) -> None:
    doc = await document(gateway.base_url)
    assert doc["openapi"].startswith("3.1") and doc["info"]["title"] == "Faregate management API"
    assert undocumented(gateway.app, doc) == []
    assert not any(p.startswith("/v1") for p in doc["paths"]), "the relay is described by the vendors' documents"
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            assert {"200", "default"} <= set(op["responses"]), (method, path)  # every answer is described
    # the check itself: a route the document leaves out is reported
    trimmed = {**doc, "paths": {p: o for p, o in doc["paths"].items() if p != "/api/user/self"}}
    assert {"GET /api/user/self", "PUT /api/user/self"} <= set(undocumented(gateway.app, trimmed))


#: blueprints whose every route declares its data shape (add one once it does): a route there
#: documented only as the bare envelope would let its answers drift unseen
DECLARED = {"system", "site", "users", "user_self", "user_admin", "tokens", "redemptions", "sign_in", "bindings",
            "topups"}


async def test_declared_blueprints_document_every_answer(gateway: GatewayServer) -> None:
    from quart_schema.validation import QUART_SCHEMA_RESPONSE_ATTRIBUTE

    bare = [rule.rule for rule in gateway.app.url_map.iter_rules()
            if rule.endpoint.split(".")[0] in DECLARED
            and 200 not in getattr(gateway.app.view_functions[rule.endpoint], QUART_SCHEMA_RESPONSE_ATTRIBUTE, {})]
    assert bare == []


async def test_declared_bodies_are_checked_and_described(gateway: GatewayServer, admin: AdminClient) -> None:
    resp = await admin.http.post("/api/redemption/", json={"name": "x", "quota": "5", "colour": "red"},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400
    body = resp.json()
    assert body["success"] is False and "quota" in body["message"] and "colour" in body["message"]
    doc = (await admin.http.get("/api/openapi.json")).json()
    operation_ = doc["paths"]["/api/redemption/"]["post"]
    schema = operation_["requestBody"]["content"]["application/json"]["schema"]
    assert schema["title"] == "RedemptionCreate" and schema["additionalProperties"] is False
    assert schema["properties"]["quota"]["maximum"] == 2**53 and "quota" in schema["required"]
    answers = operation_["responses"]["200"]["content"]["application/json"]["schema"]["anyOf"]
    assert answers[0]["title"] == "Keys" and answers[1] == {"$ref": "#/components/schemas/Failure"}
    setting = doc["paths"]["/api/user/setting"]["put"]["requestBody"]["content"]["application/json"]["schema"]
    assert setting["properties"]["notify_type"]["enum"] == ["email", "webhook", "bark", "gotify"]
    assert setting["properties"]["gotify_priority"]["maximum"] == 10


def test_drift_in_an_answer_is_caught() -> None:
    """The validator the tour below uses flags a field the data shape does not declare, a
    missing one, a wrong type and an undocumented media type; a failure always passes."""
    user = {"id": 1, "username": "u", "display_name": "", "role": 1, "status": 1, "email": "", "quota": 0,
            "used_quota": 0, "request_count": 0, "group": "default", "aff_code": "", "remark": ""}
    view = {"title": "UserView", "type": "object", "additionalProperties": False, "required": list(user),
            "properties": {k: {"type": "integer" if isinstance(v, int) else "string"} for k, v in user.items()}}
    ok = {"type": "object", "additionalProperties": False, "required": ["success", "message", "data"],
          "properties": {"success": {"const": True}, "message": {"type": "string"},
                         "data": {"$ref": "#/components/schemas/UserView"}}}
    failure = {"type": "object", "required": ["success", "message"],
               "properties": {"success": {"const": False}, "message": {"type": "string"}}}
    json_of = {"application/json": {"schema": {"anyOf": [ok, {"$ref": "#/components/schemas/Failure"}]}}}
    doc = {"paths": {"/api/user/{user_id}": {"get": {"responses": {
        "200": {"content": json_of},
        "default": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Failure"}}}}}}}},
        "components": {"schemas": {"UserView": view, "Failure": failure}}}

    def check(body: Any, status: int = 200, media: str = "application/json") -> list[str]:
        return violations(doc, "GET", "/api/user/7", status, media, body)

    assert check({"success": True, "message": "", "data": user}) == []
    assert check({"success": False, "message": "user not found"}) == []
    assert check({"success": False, "message": "no", "code": "X"}, status=401) == []
    assert check({"success": True, "message": "", "data": {**user, "password_hash": "x"}})
    assert check({"success": True, "message": "", "data": {k: v for k, v in user.items() if k != "remark"}})
    assert check({"success": True, "message": "", "data": {**user, "quota": "0"}})
    assert check({"success": False, "message": "internal error"}, status=500) == []
    assert check("a,b", media="text/csv")
    assert violations(doc, "GET", "/api/nowhere", 200, "application/json", {})


BAD_BODIES: list[tuple[str, str, dict[str, Any], str]] = [
    ("POST", "/api/user/", {"username": "bob", "password": "long-enough", "role": 55}, "role"),
    ("POST", "/api/user/", {"username": "bob", "password": "short"}, "password"),
    ("POST", "/api/user/", {"username": "bob", "password": "long-enough", "role": True}, "role"),
    ("PUT", "/api/user/", {"id": "1", "quota": 5}, "id"),
    ("PUT", "/api/user/", {"id": 1, "quota": 2**60}, "quota"),
    ("PUT", "/api/user/", {"id": 1, "display_name": "d" * 21}, "display_name"),
    ("PUT", "/api/user/self", {"username": ["x"]}, "username"),
    ("PUT", "/api/user/self", {"password": 12345678}, "password"),
    ("PUT", "/api/user/setting", {"notify_type": "pager", "quota_warning_threshold": 1}, "notify_type"),
    ("PUT", "/api/user/setting", {"quota_warning_threshold": 0}, "quota_warning_threshold"),
    ("PUT", "/api/user/setting", {"quota_warning_threshold": 5, "gotify_priority": 11}, "gotify_priority"),
    ("PUT", "/api/user/setting", {"quota_warning_threshold": 5, "record_ip_log": "yes"}, "record_ip_log"),
    ("POST", "/api/token/", {"name": "k", "remain_quota": "100"}, "remain_quota"),
    ("POST", "/api/token/", {"name": "k", "expired_time": -2}, "expired_time"),
    ("POST", "/api/token/", {"name": "k\x00"}, "name"),
    ("POST", "/api/token/", {"name": "k", "colour": "red"}, "colour"),
    ("PUT", "/api/token/", {"id": 1, "status": 9}, "status"),
    ("PUT", "/api/token/", {"name": "no id"}, "id"),
    ("PUT", "/api/redemption/", {"id": 1, "status": 3}, "status"),
    ("PUT", "/api/redemption/", {"id": 1, "quota": 0}, "quota"),
    ("POST", "/api/redemption/", {"name": "n", "quota": 1, "count": 101}, "count"),
    ("POST", "/api/user/login", {"username": "root", "password": None}, "password"),
    ("POST", "/api/setup", {"username": "root", "password": "x" * 65}, "password"),
]


async def test_bad_bodies_are_400s_naming_the_field(gateway: GatewayServer, admin: AdminClient) -> None:
    for method, path, body, field in BAD_BODIES:
        resp = await admin.http.request(method, path, json=body, headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400, (method, path, body, resp.text)
        answer = resp.json()
        assert answer["success"] is False and field in answer["message"], (method, path, answer)
    for raw in (b"{not json", b'{"name": NaN}', b"\xff\xfe", b"[" * 100_000):
        resp = await admin.http.post("/api/token/", content=raw, headers={"New-Api-User": str(admin.user_id),
                                                                          "Content-Type": "application/json"})
        assert resp.status_code == 400 and resp.json() == {"success": False, "message": "body: not valid JSON"}
    for raw in (b"[]", b"null", b'"s"'):
        resp = await admin.http.post("/api/token/", content=raw, headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and resp.json()["success"] is False
    # the JSON is read whatever the Content-Type says (as Gin's binding; curl -d sends a form type)
    resp = await admin.http.post("/api/token/", content=b'{"name": "curl"}', headers={
        "New-Api-User": str(admin.user_id), "Content-Type": "application/x-www-form-urlencoded"})
    assert resp.json()["success"] is True and resp.json()["data"]["name"] == "curl"


# -- the tour: every answer, success and failure, checked against the document ---------------------
async def test_every_answer_conforms_to_the_document(gateway: GatewayServer, admin: AdminClient) -> None:
    doc = await document(gateway.base_url)
    problems: list[str] = []
    seen: set[str] = set()

    async def conforms(response: httpx.Response) -> None:
        await response.aread()
        request = response.request
        media = response.headers.get("content-type", "").split(";")[0]
        body = response.json() if media == "application/json" else response.text
        found = operation(doc, request.method, request.url.path)
        seen.add(f"{request.method} {found.get('operationId') if found else request.url.path}")
        problems.extend(violations(doc, request.method, request.url.path, response.status_code,
                                   response.headers.get("content-type", ""), body))

    admin.http.event_hooks["response"].append(conforms)
    await admin.ok("POST", "/api/user/", json={"username": "walt", "password": ROOT_PASSWORD,
                                               "display_name": "Walt", "remark": "from the UI's form"})
    walt = AdminClient(gateway.base_url)
    walt.http.event_hooks["response"].append(conforms)
    walt.user_id = (await walt.ok("POST", "/api/user/login", json={"username": "walt", "password": ROOT_PASSWORD}))[
        "id"]
    visitor = httpx.AsyncClient(base_url=gateway.base_url, event_hooks={"response": [conforms]})
    try:
        await _site(admin, visitor)
        await _users(admin, walt)
        await _tokens(walt)
        await _redemptions(admin, walt)
        await _walk(doc, admin, visitor)
    finally:
        await walt.close()
        await visitor.aclose()
    assert problems == [], "\n".join(problems[:20])
    assert len(seen) > 60, sorted(seen)


async def _site(admin: AdminClient, visitor: httpx.AsyncClient) -> None:
    for path in ("/api/setup", "/api/status", "/api/notice", "/api/about", "/api/home_page_content",
                 "/api/user-agreement", "/api/privacy-policy", "/api/pricing", "/api/ratio_config",
                 "/api/user/groups", "/api/group/", "/api/user/self", "/api/user/logout"):
        await visitor.get(path)
    assert (await visitor.post("/api/setup", json={"username": "again", "password": "long-enough"})).json()[
        "success"] is False
    await admin.set_option("ExposeRatioEnabled", True)
    assert (await visitor.get("/api/ratio_config")).json()["success"] is True
    groups = (await visitor.get("/api/user/groups")).json()["data"]
    assert "default" in groups and set(groups["default"]) == {"ratio", "desc"}
    for path in ("/api/group/", "/api/status/test", "/api/plugins", "/api/option/", "/api/option/schema",
                 "/api/user/groups"):
        await admin.ok("GET", path)
    assert (await admin.call("PUT", "/api/option/", json={"key": "RetryTimes", "value": "two"}))["success"] is False


async def _users(admin: AdminClient, walt: AdminClient) -> None:
    uid = walt.user_id
    assert (await admin.ok("GET", f"/api/user/{uid}"))["remark"] == "from the UI's form"
    await admin.ok("GET", "/api/user/", params={"page_size": 1})
    await admin.ok("GET", "/api/user/search", params={"keyword": "wal"})
    # new-api's edit form PUTs the whole user it loaded, with its own fields beside ours
    loaded = await admin.ok("GET", f"/api/user/{uid}")
    form = {"github_id": "", "oidc_id": "", "discord_id": "", "wechat_id": "", "telegram_id": "", "linux_do_id": "",
            "quota_amount": 0.0, "password": "", "DeletedAt": None, "setting": "", "aff_count": 0}
    updated = await admin.ok("PUT", "/api/user/", json={**loaded, **form, "display_name": "Walter", "quota": 777})
    assert (updated["display_name"], updated["quota"], updated["role"]) == ("Walter", 777, m.ROLE_USER)
    assert (await admin.ok("POST", "/api/user/manage", json={"id": uid, "action": "disable"}))["status"] == 2
    await admin.ok("POST", "/api/user/manage", json={"id": uid, "action": "enable"})
    assert (await admin.call("POST", "/api/user/manage", json={"id": admin.user_id, "action": "demote"}))[
        "success"] is False
    # the self-service form sends the whole self view back too; quota and group there are ignored
    me = await walt.ok("GET", "/api/user/self")
    changed = await walt.ok("PUT", "/api/user/self", json={**me, **form, "quota": 10**9, "group": "vip",
                                                             "display_name": "W.", "original_password": ""})
    assert (changed["display_name"], changed["quota"], changed["group"]) == ("W.", 777, "default")
    for path in ("/api/user/token", "/api/user/aff", "/api/user/models", "/api/user/self/groups", "/api/user/groups",
                 "/api/user/setting"):
        await walt.ok("GET", path)
    settings = {"notify_type": "gotify", "quota_warning_threshold": 500.5, "gotify_url": "https://push.example",
                "gotify_token": "tok-secret", "gotify_priority": 7, "accept_unset_model_ratio_model": True,
                "upstream_model_update_notify_enabled": True}
    saved = await walt.ok("PUT", "/api/user/setting", json=settings)
    assert saved["gotify_token"] is True and "upstream_model_update_notify_enabled" not in saved  # not an admin's
    # what the GET shows (a secret as true) may be sent back: the stored secret stays
    again = await walt.ok("PUT", "/api/user/setting", json=await walt.ok("GET", "/api/user/setting"))
    assert again == saved and "tok-secret" in (await m.User.get(id=uid)).setting
    assert (await admin.ok("PUT", "/api/user/setting", json={**settings, "notify_type": "email"}))[
        "upstream_model_update_notify_enabled"] is True
    assert (await walt.call("PUT", "/api/user/setting", json={**settings, "bark_url": "ftp://x"}))["success"] is False


async def _tokens(walt: AdminClient) -> None:
    # new-api's create form: its remain_amount beside the fields
    form = {"name": "ui", "remain_quota": 5000, "remain_amount": 0.01, "expired_time": -1, "unlimited_quota": False,
            "model_limits_enabled": False, "model_limits": "", "allow_ips": "", "group": "", "cross_group_retry": False}
    created = await walt.ok("POST", "/api/token/", json=form)
    tid = created["id"]
    for path in ("/api/token/", f"/api/token/{tid}", "/api/token/search?keyword=u", "/api/token/search?token=ab"):
        await walt.ok("GET", path)
    loaded = await walt.ok("GET", f"/api/token/{tid}")
    updated = await walt.ok("PUT", "/api/token/", json={**loaded, "remain_amount": 0.02, "name": "renamed",
                                                        "DeletedAt": None})
    assert updated["name"] == "renamed" and updated["key"] == created["key"]
    assert (await walt.ok("PUT", "/api/token/?status_only=1", json={"id": tid, "status": 2}))["status"] == 2
    assert (await walt.call("PUT", "/api/token/", json={"id": tid, "group": "svip"}))["success"] is False
    await walt.ok("POST", f"/api/token/{tid}/key")
    await walt.ok("POST", "/api/token/batch/keys", json={"ids": [tid]})
    other = (await walt.ok("POST", "/api/token/", json={"name": "other"}))["id"]
    assert await walt.ok("POST", "/api/token/batch", json={"ids": [other]}) == 1
    await walt.ok("DELETE", f"/api/token/{tid}")
    assert (await walt.call("DELETE", f"/api/token/{tid}"))["success"] is False


async def _redemptions(admin: AdminClient, walt: AdminClient) -> None:
    # new-api's form sends amount (the quota as money) beside quota
    keys = await admin.ok("POST", "/api/redemption/", json={"name": "promo", "quota": 100, "amount": 0.0002,
                                                            "count": 2, "expired_time": 0})
    listed = await admin.ok("GET", "/api/redemption/")
    rid = next(item["id"] for item in listed["items"] if item["key"] == keys[0])
    await admin.ok("GET", "/api/redemption/search", params={"keyword": "pro"})
    loaded = await admin.ok("GET", f"/api/redemption/{rid}")
    assert (await admin.ok("PUT", "/api/redemption/", json={**loaded, "quota": 200, "amount": 0.0004}))["quota"] == 200
    assert await walt.ok("POST", "/api/user/topup", json={"key": keys[1]}) == 100
    assert (await walt.call("POST", "/api/user/topup", json={"key": keys[1]}))["success"] is False
    assert await admin.ok("DELETE", "/api/redemption/invalid") == 1
    await admin.ok("DELETE", f"/api/redemption/{rid}")


async def _walk(doc: dict[str, Any], admin: AdminClient, visitor: httpx.AsyncClient) -> None:
    """Every documented GET, as root and as a visitor, with ids that exist where the path
    takes one."""
    token = (await admin.ok("POST", "/api/token/", json={"name": "walk"}))["id"]
    ids = {"user_id": str(admin.user_id), "token_id": str(token)}
    for path, operations in doc["paths"].items():
        if "get" in operations:
            concrete = re.sub(r"\{([a-z_]+)\}", lambda p: ids.get(p.group(1), "1"), path)
            await admin.http.get(concrete, headers={"New-Api-User": str(admin.user_id)})
            await visitor.get(concrete)
