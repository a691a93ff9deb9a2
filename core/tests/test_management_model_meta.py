"""Model metadata and vendors (/api/models/, /api/vendors/): CRUD with declared, bounded
bodies; the computed fields from the routing snapshot; missing models honour name rules;
the upstream sync previews and applies against a local catalogue server, never
overwrites a locked row, and turns every upstream failure into a clear success:false. The bad
bodies refused with a 400 are in test_management_model_meta_refused.py (one gateway for the module)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
import pytest_asyncio

from faregate.db import models as m
from faregate.management import model_sync
from faregate.testing.fake_server import FakeServer, Fault, Request, Response
from faregate.testing.harness import AdminClient, GatewayServer, free_port

UPSTREAM_MODELS = [
    {"model_name": "gpt-4o", "description": "Omni model", "icon": "OpenAI", "tags": "chat,vision",
     "vendor_name": "OpenAI", "name_rule": 0, "status": 1, "endpoints": {"openai": {"path": "/v1/chat/completions"}}},
    {"model_name": "gpt-4o-mini", "description": "Small omni", "vendor_name": "OpenAI"},
    {"model_name": "o3", "description": "Reasoning", "vendor_name": "OpenAI", "tags": "reasoning"},
    {"model_name": "x" * 300, "description": "too long a name: ignored"},
    "not an object",
]
UPSTREAM_VENDORS = [{"name": "OpenAI", "description": "Makers of GPT", "icon": "OpenAI.Color"}]


class FakeCatalogue(FakeServer):
    """A metadata site: ``/meta/api/newapi/*.json`` (and the i18n variants)."""

    def __init__(self) -> None:
        super().__init__()
        self.models: Any = {"success": True, "message": "", "data": UPSTREAM_MODELS}
        self.vendors: Any = UPSTREAM_VENDORS  # a bare array: new-api reads both shapes

    async def answer(self, request: Request, response: Response) -> None:
        if not request.path.startswith("/meta/"):
            return response.send(404, b"SECRET-UPSTREAM-TEXT not here")
        if request.path.endswith("/newapi/models.json"):
            return await response.reply(200, orjson.dumps(self.models))
        if request.path.endswith("/newapi/vendors.json"):
            return await response.reply(200, orjson.dumps(self.vendors))
        return response.send(404, b"SECRET-UPSTREAM-TEXT not here")


@pytest_asyncio.fixture
async def catalogue(admin: AdminClient) -> AsyncIterator[FakeCatalogue]:
    async with FakeCatalogue() as fake:
        await admin.set_option("SyncUpstreamBase", fake.base_url + "/meta/")
        yield fake


async def _channel(admin: AdminClient, models: str) -> None:
    await admin.add_channel(base_url="http://127.0.0.1:9", models=models, name="main")


# -- vendors ------------------------------------------------------------------------------
async def test_vendor_crud(admin: AdminClient) -> None:
    openai = await admin.ok("POST", "/api/vendors/", json={"name": " OpenAI ", "icon": "OpenAI"})
    assert (openai["name"], openai["status"], openai["model_count"]) == ("OpenAI", 1, 0)
    dup = await admin.call("POST", "/api/vendors/", json={"name": "OpenAI"})
    assert dup["success"] is False and "already exists" in dup["message"]
    other = await admin.ok("POST", "/api/vendors/", json={"name": "An_thropic", "description": "Claude"})
    await admin.ok("POST", "/api/models/", json={"model_name": "gpt-4o", "vendor_id": openai["id"]})
    listed = await admin.ok("GET", "/api/vendors/", params={"page_size": 1})
    assert (listed["total"], len(listed["items"])) == (2, 1)
    counts = {v["name"]: v["model_count"] for v in (await admin.ok("GET", "/api/vendors/"))["items"]}
    assert counts == {"OpenAI": 1, "An_thropic": 0}
    assert (await admin.ok("GET", "/api/vendors/search", params={"keyword": "claude"}))["total"] == 1
    assert (await admin.ok("GET", "/api/vendors/search", params={"keyword": "n_t"}))["total"] == 1
    assert (await admin.ok("GET", "/api/vendors/search", params={"keyword": "%"}))["total"] == 0
    assert (await admin.call("GET", "/api/vendors/search", params={"keyword": "k" * 65}))["success"] is False
    assert (await admin.ok("GET", f"/api/vendors/{openai['id']}"))["model_count"] == 1
    assert (await admin.call("GET", "/api/vendors/999"))["success"] is False
    assert (await admin.call("GET", "/api/vendors/abc"))["success"] is False
    updated = await admin.ok("PUT", "/api/vendors/", json={**other, "status": 0, "model_count": 9})
    assert (updated["name"], updated["description"], updated["status"]) == ("An_thropic", "Claude", 0)
    clash = await admin.call("PUT", "/api/vendors/", json={"id": other["id"], "name": "OpenAI"})
    assert clash["success"] is False and "already exists" in clash["message"]
    await admin.ok("DELETE", f"/api/vendors/{openai['id']}")
    assert (await m.ModelMeta.get(model_name="gpt-4o")).vendor_id == 0  # kept, without a vendor
    assert (await admin.call("DELETE", f"/api/vendors/{openai['id']}"))["success"] is False


# -- models -------------------------------------------------------------------------------
async def test_model_crud_and_computed_fields(gateway: GatewayServer, admin: AdminClient) -> None:
    await _channel(admin, "gpt-4o,gpt-4o-mini,claude-3,gemini-2.5-pro-thinking-128")
    vendor = await admin.ok("POST", "/api/vendors/", json={"name": "OpenAI"})
    exact = await admin.ok("POST", "/api/models/", json={
        "model_name": "gpt-4o", "vendor_id": vendor["id"], "tags": "chat", "endpoints": '{"openai": {}}'})
    assert exact["bound_channels"] == [{"name": "main", "type": 1}]
    assert (exact["enable_groups"], exact["quota_types"], exact["sync_official"]) == (["default"], [0], 1)
    assert "matched_models" not in exact
    prefix = await admin.ok("POST", "/api/models/", json={"model_name": "gpt-", "name_rule": 1, "status": 0})
    assert (prefix["matched_models"], prefix["matched_count"]) == (["gpt-4o", "gpt-4o-mini"], 2)
    unused = await admin.ok("POST", "/api/models/", json={"model_name": "dall-e-3", "description": "images"})
    assert (unused["bound_channels"], unused["enable_groups"], unused["quota_types"]) == ([], [], [])
    await admin.set_option("ModelPrice", {"gpt-4o": 0.01})
    assert (await admin.ok("GET", f"/api/models/{exact['id']}"))["quota_types"] == [1]
    assert sorted((await admin.ok("GET", f"/api/models/{prefix['id']}"))["quota_types"]) == [0, 1]

    page = await admin.ok("GET", "/api/models/")
    assert page["total"] == 3 and page["vendor_counts"] == {str(vendor["id"]): 1, "0": 2}
    assert [i["model_name"] for i in page["items"]] == ["dall-e-3", "gpt-", "gpt-4o"]  # newest first
    assert (await admin.ok("GET", "/api/models/", params={"status": "0"}))["total"] == 1
    assert (await admin.call("GET", "/api/models/", params={"status": "x"}))["success"] is False
    search = "/api/models/search"
    assert (await admin.ok("GET", search, params={"keyword": "image"}))["total"] == 1
    assert (await admin.ok("GET", search, params={"keyword": "_"}))["total"] == 0
    assert (await admin.ok("GET", search, params={"vendor": str(vendor["id"])}))["total"] == 1
    assert (await admin.ok("GET", search, params={"vendor": "open", "keyword": "gpt"}))["total"] == 1
    assert (await admin.ok("GET", search, params={"vendor": "nobody"}))["total"] == 0

    dup = await admin.call("POST", "/api/models/", json={"model_name": "gpt-4o"})
    assert dup["success"] is False and "already exists" in dup["message"]
    clash = await admin.call("PUT", "/api/models/", json={"id": unused["id"], "model_name": "gpt-4o"})
    assert clash["success"] is False and "already exists" in clash["message"]
    for bad in ({"id": unused["id"], "vendor_id": 999}, {"id": unused["id"], "endpoints": "not json"},
                {"id": 999, "status": 0}):
        assert (await admin.call("PUT", "/api/models/", json=bad))["success"] is False
    # status_only touches the status alone, whatever else the body says
    only = await admin.ok("PUT", "/api/models/?status_only=true",
                          json={"id": exact["id"], "status": 0, "description": "ignored"})
    assert (only["status"], only["description"], only["tags"]) == (0, "", "chat")
    full = await admin.ok("PUT", "/api/models/", json={"id": exact["id"], "description": "Omni", "sync_official": 0})
    assert (full["description"], full["sync_official"], full["status"]) == ("Omni", 0, 0)
    assert full["vendor_id"] == vendor["id"]
    # an edit form sends back the whole row it loaded, computed fields and all
    loaded = await admin.ok("GET", f"/api/models/{prefix['id']}")
    edited = await admin.ok("PUT", "/api/models/", json={**loaded, "description": "all GPTs", "created_time": 1})
    assert (edited["description"], edited["created_time"]) == ("all GPTs", prefix["created_time"])
    assert edited["matched_count"] == 2
    await admin.ok("DELETE", f"/api/models/{unused['id']}")
    assert (await admin.call("DELETE", f"/api/models/{unused['id']}"))["success"] is False
    assert await m.ModelMeta.all().count() == 2
    # a per-call price under new-api's matching name (a Gemini 2.5 thinking budget's), as the relay finds it
    await admin.set_option("ModelPrice", {"gemini-2.5-pro-thinking-*": 0.02})
    budget = await admin.ok("POST", "/api/models/", json={"model_name": "gemini-2.5-pro-thinking-128"})
    assert budget["quota_types"] == [1]


async def test_missing_honours_name_rules(admin: AdminClient) -> None:
    await _channel(admin, "gpt-4o,gpt-4o-mini,claude-3-opus,llama-3-70b,qwen-max,my-embed-v2")
    assert await admin.ok("GET", "/api/models/missing") == [
        "claude-3-opus", "gpt-4o", "gpt-4o-mini", "llama-3-70b", "my-embed-v2", "qwen-max"]
    for name, rule in (("gpt-4o", 0), ("claude", 1), ("-70b", 3), ("embed", 2), ("qwen", 0)):
        await admin.ok("POST", "/api/models/", json={"model_name": name, "name_rule": rule})
    assert await admin.ok("GET", "/api/models/missing") == ["gpt-4o-mini", "qwen-max"]


# -- upstream sync ------------------------------------------------------------------------
async def test_sync_preview_and_apply(admin: AdminClient, catalogue: FakeCatalogue) -> None:
    await _channel(admin, "gpt-4o,gpt-4o-mini,local-model")
    await admin.ok("POST", "/api/models/", json={"model_name": "gpt-4o-mini", "description": "mine",
                                                 "sync_official": 0})
    await admin.ok("POST", "/api/models/", json={"model_name": "o3", "description": "old", "tags": "reasoning"})
    preview = await admin.ok("GET", "/api/models/sync_upstream/preview")
    assert (preview["missing"], preview["unknown"], preview["locked"]) == (["gpt-4o"], ["local-model"], ["gpt-4o-mini"])
    assert preview["ignored"] == 2
    assert preview["conflicts"] == [{"model_name": "o3", "fields": [
        {"field": "description", "local": "old", "upstream": "Reasoning"},
        {"field": "vendor", "local": "", "upstream": "OpenAI"}]}]
    assert preview["source"]["models_url"] == catalogue.base_url + "/meta/api/newapi/models.json"

    result = await admin.ok("POST", "/api/models/sync_upstream", json={"overwrite": [
        {"model_name": "o3", "fields": ["description", "vendor"]},
        {"model_name": "gpt-4o-mini", "fields": ["description"]}]})
    assert (result["created_list"], result["updated_list"]) == (["gpt-4o"], ["o3"])
    # local-model: upstream does not know it; gpt-4o-mini: locked
    assert (result["created_vendors"], result["skipped_models"]) == (1, ["local-model", "gpt-4o-mini"])
    vendor = await m.Vendor.get(name="OpenAI")
    assert (vendor.description, vendor.icon) == ("Makers of GPT", "OpenAI.Color")
    made = await m.ModelMeta.get(model_name="gpt-4o")
    assert (made.vendor_id, made.tags, made.sync_official, made.status) == (vendor.id, "chat,vision", 1, 1)
    assert orjson.loads(made.endpoints) == {"openai": {"path": "/v1/chat/completions"}}
    o3 = await m.ModelMeta.get(model_name="o3")
    assert (o3.description, o3.vendor_id) == ("Reasoning", vendor.id)
    assert (await m.ModelMeta.get(model_name="gpt-4o-mini")).description == "mine"  # locked: untouched
    after = await admin.ok("GET", "/api/models/sync_upstream/preview")
    assert (after["missing"], after["conflicts"]) == ([], [])


async def test_sync_subset_locale_and_no_work(admin: AdminClient, catalogue: FakeCatalogue) -> None:
    await _channel(admin, "gpt-4o,o3")
    nothing = await admin.ok("POST", "/api/models/sync_upstream", json={"create": []})
    assert nothing["created_models"] == 0 and catalogue.requests == []  # nothing to do: upstream not asked
    some = await admin.ok("POST", "/api/models/sync_upstream", json={"create": ["o3"], "locale": "zh-cn"})
    assert some["created_list"] == ["o3"] and some["source"]["locale"] == "zh-CN"
    assert catalogue.requests[0]["path"].startswith("/meta/api/i18n/zh-CN/newapi/")
    assert not await m.ModelMeta.exists(model_name="gpt-4o")


async def test_sync_upstream_failures_are_clear_and_bounded(admin: AdminClient, catalogue: FakeCatalogue,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    await _channel(admin, "gpt-4o")

    async def failure() -> str:
        for path, method in (("/api/models/sync_upstream/preview", "GET"), ("/api/models/sync_upstream", "POST")):
            body = await admin.call(method, path, json={} if method == "POST" else None)
            assert body["success"] is False and "data" not in body, body
        assert "SECRET" not in body["message"] and len(body["message"]) < 300
        assert not await m.ModelMeta.exists()
        return str(body["message"])

    catalogue.models = {"data": 5}
    assert "not a JSON array" in await failure()
    catalogue.models = UPSTREAM_MODELS
    for _ in range(4):  # both lists, for the preview and the sync
        catalogue.push_fault(Fault("malformed_json", body=b'{"data": [SECRET'))
    assert "not valid JSON" in await failure()
    await admin.set_option("SyncUpstreamBase", catalogue.base_url + "/elsewhere")
    assert "HTTP 404" in await failure()
    await admin.set_option("SyncUpstreamBase", catalogue.base_url + "/meta")
    monkeypatch.setattr(model_sync, "MAX_BYTES", 100)
    assert "larger than 100 bytes" in await failure()
    monkeypatch.setattr(model_sync, "MAX_BYTES", 10 << 20)
    fetch_timeout = model_sync.FETCH_TIMEOUT
    monkeypatch.setattr(model_sync, "FETCH_TIMEOUT", 0.3)
    for _ in range(4):
        catalogue.push_fault(Fault("hang"))
    assert "timed out" in await failure()
    catalogue.faults.clear()
    # a refused connection, told as such (not cut by the short timeout on a loaded machine)
    monkeypatch.setattr(model_sync, "FETCH_TIMEOUT", fetch_timeout)
    await admin.set_option("SyncUpstreamBase", f"http://127.0.0.1:{free_port()}")
    assert "could not fetch" in await failure()


async def test_private_address_policy_applies(make_gateway: Callable[..., Awaitable[GatewayServer]]) -> None:
    server = await make_gateway(settings={"channel_private_addresses": "deny"})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    async with FakeCatalogue() as fake:
        await admin.set_option("SyncUpstreamBase", fake.base_url)
        body = await admin.call("GET", "/api/models/sync_upstream/preview")
        assert body["success"] is False and "loopback" in body["message"] and fake.requests == []
    await admin.close()


async def test_sync_base_option_is_checked(admin: AdminClient) -> None:
    for bad in ("ftp://example.com", "https://user:pw@example.com", "https://example.com/?q=1", "", "not a url"):
        resp = await admin.http.put("/api/option/", json={"key": "SyncUpstreamBase", "value": bad},
                                    headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and resp.json()["success"] is False, bad
    assert not await m.Option.exists(key="SyncUpstreamBase")
