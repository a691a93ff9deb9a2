"""A service account's access tokens: one token request serves every call until shortly
before the token expires (concurrent calls that find it stale wait for one refresh), then
it is refreshed; the grant runs in a worker thread, never on the event loop; a refused or
failed grant fails the channel with the OAuth error code only, keeps using a token that
still works, and never logs the key, the assertion or a token."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import openai
import pytest

from faregate.api import UpstreamClient
from faregate.testing.logs import error_logs
from faregate_adapter_vertex import tokens
from faregate_adapter_vertex.keys import service_account
from faregate_adapter_vertex.testing import FakeGoogleOAuth, TestServiceAccount, make_service_account
from faregate_adapter_vertex.tokens import TokenCache

from .conftest import CLAUDE, GEMINI


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_one_token_for_many_calls_then_a_refresh(upstream_client: UpstreamClient,
                                                      fake_google_oauth: FakeGoogleOAuth,
                                                      vertex_account: TestServiceAccount) -> None:
    clock = Clock()
    cache = TokenCache(lambda: upstream_client, clock=clock)
    account = service_account(vertex_account.key)
    found = await asyncio.gather(*(cache.token(vertex_account.key, account) for _ in range(10)))
    assert len(set(found)) == 1 and fake_google_oauth.token_requests == 1  # one grant, shared
    assert fake_google_oauth.valid(found[0]) == vertex_account.client_email
    assert cache.project_of(found[0]) == vertex_account.project_id
    clock.now += 3599 - tokens.REFRESH_MARGIN - 1  # not yet due
    assert await cache.token(vertex_account.key, account) == found[0] and fake_google_oauth.token_requests == 1
    clock.now += 2  # within the margin before it expires: refreshed
    fresh = await cache.token(vertex_account.key, account)
    assert fresh != found[0] and fake_google_oauth.token_requests == 2


async def test_a_short_lived_token_is_refreshed_halfway(upstream_client: UpstreamClient,
                                                        vertex_account: TestServiceAccount,
                                                        fake_google_oauth: FakeGoogleOAuth) -> None:
    fake_google_oauth.expires_in = 60
    clock = Clock()
    cache = TokenCache(lambda: upstream_client, clock=clock)
    account = service_account(vertex_account.key)
    first = await cache.token(vertex_account.key, account)
    clock.now += 29
    assert await cache.token(vertex_account.key, account) == first
    clock.now += 2
    assert await cache.token(vertex_account.key, account) != first and fake_google_oauth.token_requests == 2


async def test_the_signing_runs_off_the_event_loop(upstream_client: UpstreamClient, vertex_account: TestServiceAccount,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[threading.Thread] = []
    real = tokens._assertion  # noqa: SLF001 - watched, not replaced

    def watched(account: Any) -> str:
        threads.append(threading.current_thread())
        return real(account)

    monkeypatch.setattr(tokens, "_assertion", watched)
    await TokenCache(lambda: upstream_client).token(vertex_account.key, service_account(vertex_account.key))
    assert threads and threads[0] is not threading.main_thread()


async def test_a_failed_refresh_keeps_a_token_that_still_works(upstream_client: UpstreamClient,
                                                               fake_google_oauth: FakeGoogleOAuth,
                                                               vertex_account: TestServiceAccount) -> None:
    clock = Clock()
    cache = TokenCache(lambda: upstream_client, clock=clock)
    account = service_account(vertex_account.key)
    first = await cache.token(vertex_account.key, account)
    clock.now += 3500  # due for a refresh, not yet expired
    fake_google_oauth.fail_next(400, "the endpoint refuses, for now")  # a 5xx is tried again at once
    assert await cache.token(vertex_account.key, account) == first
    assert await cache.token(vertex_account.key, account) == first  # not retried at once
    assert fake_google_oauth.token_requests == 2
    clock.now += tokens.RETRY_AFTER
    assert await cache.token(vertex_account.key, account) != first


async def test_many_gateway_calls_one_token_request(deployed: Any) -> None:
    client = deployed.openai()
    replies = await asyncio.gather(*(client.chat.completions.create(
        model=GEMINI if i % 2 else CLAUDE, messages=[{"role": "user", "content": f"call {i}"}]) for i in range(8)))
    assert all(r.choices[0].message.content for r in replies)
    assert deployed.oauth.token_requests == 1
    assert len(deployed.fake.tokens_seen) == 1 and sum(deployed.fake.tokens_seen.values()) == 8
    deployed.provider.tokens.clock = lambda: 10**9  # far past the token's life: the next call refreshes
    await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "later"}])
    assert deployed.oauth.token_requests == 2 and len(deployed.fake.tokens_seen) == 2


async def test_a_refused_grant_fails_the_channel_and_logs_no_secret(deployed: Any,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    impostor = make_service_account(deployed.oauth.token_uri, slot=1)  # a key the token endpoint does not know
    await deployed.admin.ok("PUT", "/api/channel/", json={"id": deployed.channel, "key": impostor.key})
    client = deployed.openai()
    with pytest.raises(openai.APIStatusError) as refused:
        await client.chat.completions.create(model=GEMINI, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 503 and "refused: invalid_grant" in refused.value.message
    assert deployed.fake.requests == []  # no call went upstream without a token
    texts = [r.getMessage() for r in caplog.records] + [row.content for row in await error_logs(deployed.server)]
    texts.append(refused.value.message)
    pem_body = impostor.info["private_key"].splitlines()[1]
    assertions = [r["body"].decode() for r in deployed.oauth.requests]
    for text in texts:
        assert pem_body not in text and impostor.private_key_id not in text
        assert not any(a.split("assertion=")[-1][:40] in text for a in assertions)
        assert "ya29." not in text
