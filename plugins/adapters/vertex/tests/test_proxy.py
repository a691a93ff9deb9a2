"""A Vertex channel with a service account behind the channel's proxy (``setting.proxy``):
the OAuth token grant goes through the proxy as the Vertex calls do, http (with the proxy's
credentials) and socks5 alike (a socks proxy used to fail every grant: 503
token_exchange_failed); a token endpoint's 5xx is tried again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from faregate.api import UpstreamClient
from faregate.testing.proxies import HttpProxy, Socks5Proxy
from faregate_adapter_vertex import tokens
from faregate_adapter_vertex.keys import service_account
from faregate_adapter_vertex.testing import FakeGoogleOAuth, TestServiceAccount

GEMINI = "gemini-2.5-flash"


def port(base_url: str) -> str:
    return base_url.rsplit(":", 1)[1]


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_the_token_grant_goes_through_the_channel_s_proxy(deployed: Any, scheme: str) -> None:
    async with (HttpProxy() if scheme == "http" else Socks5Proxy()) as proxy:
        url = f"http://alice:pw@127.0.0.1:{proxy.port}" if scheme == "http" else f"socks5://127.0.0.1:{proxy.port}"
        await deployed.admin.ok("PUT", "/api/channel/", json={"id": deployed.channel,
                                                             "setting": json.dumps({"proxy": url})})
        reply = await deployed.openai().chat.completions.create(
            model=GEMINI, messages=[{"role": "user", "content": "through the proxy"}])
        assert reply.choices[0].message.content
        assert deployed.oauth.token_requests == 1 and len(deployed.fake.requests) == 1
        if scheme == "http":
            (grant, grant_auth), (call, _) = proxy.seen
            assert grant.startswith(f"POST {deployed.oauth.token_uri} ") and grant_auth == "Basic YWxpY2U6cHc="
            assert call.startswith(f"POST {deployed.fake.base_url}/v1/projects/")
        else:
            assert proxy.seen == [(f"CONNECT 127.0.0.1:{port(deployed.oauth.base_url)}", ""),
                                  (f"CONNECT 127.0.0.1:{port(deployed.fake.base_url)}", "")]


async def test_a_token_endpoint_s_5xx_is_tried_again(upstream_client: UpstreamClient,
                                                     fake_google_oauth: FakeGoogleOAuth,
                                                     vertex_account: TestServiceAccount) -> None:
    fake_google_oauth.fail_next(503, "busy")
    cache = tokens.TokenCache(lambda: upstream_client)
    token = await cache.token(vertex_account.key, service_account(vertex_account.key))
    assert token.startswith("ya29.") and fake_google_oauth.token_requests == 2
