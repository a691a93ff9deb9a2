"""Channels are validated before they are stored (issue 8, #5): an unknown type (named
with the installed ones), a base URL that is not http(s) or carries credentials, header
overrides that set Host or hop-by-hop headers or smuggle CR/LF are 400s, never stored,
never a 500. A base URL has no ``?`` or ``#`` at all, an empty query or fragment included
(issue 26, item 9: ``https://host/v1?`` passed, and the API path appended to it became a
query string), so the path the gateway appends stays a path; the same holds for a channel
proxy and for the option URLs the gateway appends paths to (``SyncUpstreamBase``, an Uptime
Kuma group's ``url``). A user's webhook URL may keep its query (a token in it)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faregate.db import models as m
from faregate.kit.http_json import join_url
from faregate.net import url_form_problem
from faregate.testing.harness import AdminClient

#: the tests that call the gateway share one (each channel it stores is the test's own)
shared_gateway = pytest.mark.asyncio(loop_scope="module")

GOOD = {"type": 1, "key": "sk-upstream", "name": "ch", "base_url": "https://api.example.com", "models": "gpt-4o",
        "group": "default"}

BAD: list[tuple[dict[str, Any], str]] = [
    ({"type": 999}, "installed types: "),
    ({"base_url": "file:///etc/passwd"}, "http:// or https://"),
    ({"base_url": "gopher://127.0.0.1:6379/_INFO"}, "http:// or https://"),
    ({"base_url": "ftp://example.com"}, "http:// or https://"),
    ({"base_url": "https://user:secret@example.com"}, "user:password@"),
    ({"base_url": "https://example.com:99999"}, "not a valid URL"),
    ({"base_url": "https://exa mple.com"}, "spaces"),
    ({"base_url": "https:///nohost"}, "no host"),
    ({"base_url": "https://example.com/?a=1"}, "query string"),
    ({"base_url": "https://example.com/v1?"}, "query string"),  # an empty query: the path would follow the ?
    ({"base_url": "https://example.com?"}, "query string"),
    ({"base_url": "https://example.com/v1#"}, "query string or fragment"),
    ({"base_url": "https://example.com/v1?#"}, "query string or fragment"),
    ({"base_url": "https://example.com/v1#x"}, "query string or fragment"),
    ({"base_url": "http://127.0.0.1:8000/v1/?"}, "query string"),
    ({"setting": '{"proxy": "http://proxy.example:3128?"}'}, "path, query string or fragment"),
    ({"setting": '{"proxy": "socks5://proxy.example:1080#"}'}, "path, query string or fragment"),
    ({"setting": '{"proxy": "http://proxy.example:3128/?"}'}, "path, query string or fragment"),
    ({"header_override": '{"Host": "evil.example"}'}, "cannot be overridden"),
    ({"header_override": '{"Transfer-Encoding": "chunked"}'}, "cannot be overridden"),
    ({"header_override": '{"Connection": "close"}'}, "cannot be overridden"),
    ({"header_override": '{"X-Evil": "a\\r\\nHost: evil"}'}, "CR, LF"),
    ({"header_override": '{"Bad Name": "x"}'}, "valid header name"),
    ({"header_override": '{"X-Num": 5}'}, "must be a string"),
]


@shared_gateway
@pytest.mark.parametrize(("change", "message"), BAD, ids=[str(c) for c, _ in BAD])
async def test_bad_channels_are_refused_on_create_and_update(module_admin: AdminClient, change: dict[str, Any],
                                                             message: str) -> None:
    admin = module_admin
    channels = await m.Channel.all().count()
    resp = await admin.http.post("/api/channel/", json={"mode": "single", "channel": {**GOOD, **change}},
                                 headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and resp.json()["success"] is False
    assert message in resp.json()["message"]
    assert await m.Channel.all().count() == channels
    channel_id = await admin.add_channel(base_url=GOOD["base_url"], models="gpt-4o")
    resp = await admin.http.put("/api/channel/", json={"id": channel_id, **change},
                                headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and message in resp.json()["message"]
    row = await m.Channel.get(id=channel_id)
    assert (row.type, row.base_url) == (1, GOOD["base_url"]) and not row.header_override


@shared_gateway
async def test_good_channels_still_pass(module_admin: AdminClient) -> None:
    admin = module_admin
    await admin.add_channel(base_url="http://127.0.0.1:8000/v1", models="m", header_override='{"X-Org": "acme"}')
    await admin.add_channel(base_url="", models="m")


PATHS = ("/v1/chat/completions", "/v1/models", "/chat/completions", "/v1/realtime")
#: what a base URL is made of, ``?`` and ``#`` included
URL_TEXT = st.text(alphabet="abc/?#.:;=&%-_~0123456789", max_size=12)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(host=st.sampled_from(["example.com", "127.0.0.1:8000", "[::1]:9", "api.example.com:443"]), tail=URL_TEXT,
       path=st.sampled_from(PATHS))
def test_an_accepted_base_url_keeps_the_appended_path_a_path(host: str, tail: str, path: str) -> None:
    base = f"https://{host}/{tail}"
    if url_form_problem(base) is not None:
        return  # refused: never stored
    joined = urlsplit(join_url(base, path))
    assert "?" not in base and "#" not in base
    assert (joined.query, joined.fragment) == ("", "") and joined.path.endswith(path.rsplit("/", 1)[1])


@shared_gateway
@pytest.mark.parametrize("url", ["https://example.com/base?", "https://example.com/base#", "https://example.com?#",
                                 "https://example.com/base?x=1"])
async def test_option_urls_the_gateway_appends_paths_to_have_no_query_or_fragment(module_admin: AdminClient,
                                                                                  url: str) -> None:
    admin = module_admin
    headers = {"New-Api-User": str(admin.user_id)}
    resp = await admin.http.put("/api/option/", json={"key": "SyncUpstreamBase", "value": url}, headers=headers)
    assert resp.status_code == 400 and "query string or fragment" in resp.json()["message"]
    groups = [{"categoryName": "core", "url": url, "slug": "main", "description": ""}]
    resp = await admin.http.put("/api/option/", json={"key": "console_setting.uptime_kuma_groups",
                                                      "value": json.dumps(groups)}, headers=headers)
    assert resp.status_code == 400 and "query string or fragment" in resp.json()["message"]
    assert not await m.Option.filter(key__in=["SyncUpstreamBase", "console_setting.uptime_kuma_groups"]).exists()


def test_a_webhook_url_keeps_its_query() -> None:
    """Called as it is, nothing appended: a token in its query is the user's to put there."""
    assert url_form_problem("https://hooks.example/notify?token=abc", query=True) is None
    assert url_form_problem("https://hooks.example/notify?token=abc") is not None
