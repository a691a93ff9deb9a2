"""What the official SDKs read from the gateway's own answers (issue 9, items 1, 2, 7, 10):
a final 404 for an unknown model that the SDKs do not retry, a WebSocket to no route
refused with 404 (not a 500), OpenAI's codes for out-of-range numbers, the request id
under every name the SDKs read, and the upstream's retry advice relayed."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import openai
import pytest
import websockets

from faregate.errors import GatewayError
from faregate.exchange.attempts import read_retry_headers
from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_openai.testing import FakeOpenAI, Fault

MSGS: Any = [{"role": "user", "content": "hi"}]


async def test_unknown_model_is_a_final_404_the_sdk_does_not_retry(gateway: GatewayServer,
                                                                   admin: AdminClient) -> None:
    sent: list[httpx.Request] = []

    async def count(request: httpx.Request) -> None:
        sent.append(request)

    http = httpx.AsyncClient(event_hooks={"request": [count]})
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(),
                                max_retries=2, http_client=http)
    with pytest.raises(openai.NotFoundError) as info:
        await client.chat.completions.create(model="no-such-model", messages=MSGS)
    await client.close()
    assert len(sent) == 1, "the SDK did not retry"
    assert isinstance(info.value.body, dict)
    assert (info.value.body["type"], info.value.body["code"]) == ("invalid_request_error", "model_not_found")
    assert info.value.response.headers["x-should-retry"] == "false"


@pytest.mark.parametrize("path", ["/v1/realtime/sessions?model=gpt-4o-realtime-preview", "/no/such/socket"])
async def test_websocket_without_a_route_is_refused_with_404(gateway: GatewayServer, path: str) -> None:
    url = gateway.base_url.replace("http://", "ws://") + path
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(url):
            pass
    assert refused.value.response.status_code == 404


async def test_max_tokens_zero_is_refused_with_openais_code(gateway: GatewayServer, admin: AdminClient) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS, max_tokens=0)
    await client.close()
    assert isinstance(info.value.body, dict)
    assert (info.value.body["code"], info.value.body["param"]) == ("integer_below_min_value", "max_tokens")
    assert info.value.response.headers["x-should-retry"] == "false"


async def test_both_sdks_see_the_request_id(gateway: GatewayServer, admin: AdminClient,
                                            fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o")
    key = await admin.add_token()
    oa = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0)
    reply = await oa.chat.completions.with_raw_response.create(model="gpt-4o", messages=MSGS)
    assert reply.request_id and reply.request_id == reply.headers["x-oneapi-request-id"]
    await oa.close()
    if "anthropic.messages" in gateway.gateway.formats:
        an = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0)
        raw = await an.messages.with_raw_response.create(model="gpt-4o", max_tokens=16, messages=MSGS)
        assert raw.request_id == raw.headers["x-oneapi-request-id"]
        await an.close()


async def test_upstream_retry_advice_reaches_the_client(gateway: GatewayServer, admin: AdminClient,
                                                        fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o")
    client = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=await admin.add_token(), max_retries=0)
    fake_openai.push_fault(Fault("status", status=429, retry_after="2"))
    with pytest.raises(openai.RateLimitError) as info:
        await client.chat.completions.create(model="gpt-4o", messages=MSGS)
    await client.close()
    headers = info.value.response.headers
    assert (headers["retry-after"], headers["retry-after-ms"]) == ("2", "2000")
    assert "x-should-retry" not in headers  # the upstream gave no verdict: the SDK decides


def test_retry_headers_are_read_precisely() -> None:
    err = GatewayError(429, "slow down", upstream=True)
    read_retry_headers(err, {"retry-after-ms": "1500", "retry-after": "9", "x-should-retry": "false"})
    assert (err.retry_after, err.should_retry) == (1.5, False)
    odd = GatewayError(503, "x", upstream=True)
    read_retry_headers(odd, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT", "x-should-retry": "maybe"})
    assert (odd.retry_after, odd.should_retry) == (None, None)


async def test_the_gemini_sdk_reads_a_final_not_found(gateway: GatewayServer, admin: AdminClient) -> None:
    """Gemini's native routes answer in Gemini's error shape, which the official SDK turns
    into its typed error; the gateway's own verdict is final (``X-Should-Retry: false``)."""
    if "gemini.generate_content" not in gateway.gateway.formats:
        pytest.skip("the Gemini plugin is not installed")
    from google import genai
    from google.genai import errors, types

    client = genai.Client(api_key=await admin.add_token(),
                          http_options=types.HttpOptions(base_url=gateway.base_url, api_version="v1beta"))
    with pytest.raises(errors.ClientError) as info:
        await client.aio.models.generate_content(model="no-such-model", contents="hi")
    await client.aio.aclose()
    assert (info.value.code, info.value.status) == (404, "NOT_FOUND")
    assert info.value.response is not None and info.value.response.headers["x-should-retry"] == "false"
