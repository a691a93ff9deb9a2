"""new-api's Vertex key formats, read and checked when a channel is saved: a service
account's key file (pasted as the file comes, over many lines: stored as one line of
compact JSON, a JSON array of several as one key each), or an API key, per the setting
``vertex_key_type`` or the key's shape; ``other`` a region or new-api's map of model →
region. A bad key is a 400 naming the field and is never stored; a token endpoint the
gateway must not post to (plain http off this host: a cloud metadata server) is refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_vertex.keys import key_problem, region_for
from faregate_adapter_vertex.models import vertex_model
from faregate_adapter_vertex.testing import API_KEY, FakeGoogleOAuth, TestServiceAccount, make_service_account

BASE = {"type": 41, "name": "vertex", "base_url": "", "models": "gemini-2.5-flash", "group": "default"}


async def _add(admin: AdminClient, mode: str = "single", **channel: Any) -> dict[str, Any]:
    return await admin.call("POST", "/api/channel/", json={"mode": mode, "channel": {**BASE, **channel}})


def _edited(account: TestServiceAccount, **changes: Any) -> str:
    info = {**account.info, **changes}
    return json.dumps({k: v for k, v in info.items() if v is not None}, indent=2)


@pytest.mark.parametrize(("changes", "problem"), [
    ({"private_key": None}, "has no private_key"),
    ({"client_email": "nobody"}, "client_email"),
    ({"project_id": "Bad_Project!"}, "project_id"),
    ({"type": "authorized_user"}, "not a service account"),
    ({"private_key": "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"}, "cannot be loaded"),
    ({"token_uri": "http://169.254.169.254/computeMetadata/v1/token"}, "token_uri must be an https URL"),
    ({"token_uri": "http://metadata.google.internal/token"}, "token_uri must be an https URL"),
    ({"token_uri": "https://user:pw@oauth2.googleapis.com/token"}, "without credentials"),
])
def test_bad_service_account_keys(vertex_account: TestServiceAccount, changes: dict[str, Any], problem: str) -> None:
    found = key_problem(_edited(vertex_account, **changes), "", {})
    assert found is not None and problem in found
    assert vertex_account.info["private_key"].splitlines()[1] not in found


def test_good_keys_and_settings(vertex_account: TestServiceAccount) -> None:
    assert key_problem(vertex_account.key, "us-central1", {"vertex_key_type": "json"}) is None
    assert key_problem(_edited(vertex_account, token_uri="https://oauth2.googleapis.com/token"), "", {}) is None
    assert key_problem(API_KEY, "global", {}) is None
    assert key_problem(API_KEY, "", {"vertex_key_type": "api_key", "vertex_project": "my-project-1"}) is None
    assert "api_key but the key is JSON" in str(key_problem(vertex_account.key, "", {"vertex_key_type": "api_key"}))
    assert "JSON of its key file" in str(key_problem(API_KEY, "", {"vertex_key_type": "json"}))
    assert "vertex_key_type" in str(key_problem(API_KEY, "", {"vertex_key_type": "p12"}))
    assert "region" in str(key_problem(API_KEY, "us-central1.evil.example", {}))
    assert "map models" in str(key_problem(API_KEY, '{"default": "x/y"}', {}))
    assert "vertex_project" in str(key_problem(API_KEY, "", {"vertex_project": "../other"}))


def test_regions_follow_new_apis_rule() -> None:
    regions = '{"default": "us-central1", "claude-sonnet-4-5": "us-east5"}'
    assert region_for(regions, "claude-sonnet-4-5") == "us-east5"
    assert region_for(regions, "gemini-2.5-pro") == "us-central1"
    assert region_for('{"claude-sonnet-4-5": "us-east5"}', "gemini-2.5-pro") == "global"
    assert region_for("europe-west4", "anything") == "europe-west4"
    assert region_for("", "anything") == "global"


@pytest.mark.parametrize(("name", "expected"), [
    ("claude-sonnet-4-5", "claude-sonnet-4-5@20250929"), ("claude-3-5-haiku-20241022", "claude-3-5-haiku@20241022"),
    ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet-v2@20241022"), ("claude-opus-4-1@20250805",
                                                                     "claude-opus-4-1@20250805"),
    ("gemini-2.5-pro", "gemini-2.5-pro"),
])
def test_claude_names_on_vertex(name: str, expected: str) -> None:
    assert vertex_model(name) == expected


async def test_keys_are_checked_and_stored_one_a_line(gateway: GatewayServer, admin: AdminClient,
                                                      fake_google_oauth: FakeGoogleOAuth,
                                                      vertex_account: TestServiceAccount) -> None:
    refused = await _add(admin, key=_edited(vertex_account, token_uri="http://169.254.169.254/token"))
    assert refused["success"] is False and refused["message"].startswith("key: the service-account key: its token_uri")
    assert vertex_account.info["private_key"].splitlines()[1] not in refused["message"]
    assert (await _add(admin, key=API_KEY, other="nowhere land"))["message"].startswith("key: other must be")
    assert (await admin.ok("GET", "/api/channel/"))["total"] == 0  # nothing stored
    single = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": {
        **BASE, "key": vertex_account.key}})  # pasted as the file comes: many lines
    second = make_service_account(fake_google_oauth.token_uri, name="second", slot=2)
    both = json.dumps([vertex_account.info, second.info], indent=2)
    batch = await admin.ok("POST", "/api/channel/", json={"mode": "batch", "channel": {**BASE, "key": both}})
    multi = await admin.ok("POST", "/api/channel/", json={"mode": "multi_to_single", "channel": {**BASE, "key": both}})
    snapshot = gateway.gateway.snapshot.channels
    assert [json.loads(k) for k in snapshot[single].keys] == [vertex_account.info]
    assert len(batch) == 2 and [json.loads(snapshot[i].keys[0])["client_email"] for i in batch] == [
        vertex_account.client_email, second.client_email]
    assert [json.loads(k)["client_email"] for k in snapshot[multi].keys] == [vertex_account.client_email,
                                                                             second.client_email]
    keys = await admin.ok("POST", "/api/channel/multi_key/manage", json={"channel_id": multi,
                                                                          "action": "get_key_status"})
    assert keys["total"] == 2
    for key in snapshot[multi].keys:
        assert "\n" not in key
