"""The OpenAI provider's balance (new-api's for OpenAI and Custom channels) and the fake's
billing endpoints it reads."""

from __future__ import annotations

import datetime

import httpx
import pytest

from faregate.api import GatewayError, UpstreamRequest, UpstreamTarget
from faregate_adapter_openai import OpenAIProvider
from faregate_adapter_openai.billing import usage_window
from faregate_adapter_openai.testing import FakeOpenAI


def _target(fake: FakeOpenAI, channel_type: int = 1) -> UpstreamTarget:
    return UpstreamTarget(base_url=fake.base_url, key=fake.key or "sk-any", model="", stream=False,
                          channel_type=channel_type)


async def _fetch(req: UpstreamRequest) -> bytes:
    """What the core's fetch does, in short: the 200 body, else an error."""
    async with httpx.AsyncClient() as http:
        resp = await http.request(req.method, req.url, headers=req.headers)
    if resp.status_code != 200:
        raise GatewayError(resp.status_code, f"upstream answered {resp.status_code}")
    return resp.content


def test_usage_window() -> None:
    day = datetime.date(2026, 3, 17)
    assert usage_window(day, True) == ("2026-03-01", "2026-03-17")
    assert usage_window(day, False) == ("2025-12-07", "2026-03-17")


async def test_balance_from_the_billing_endpoints(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider()
    assert provider.fetch_balance is not None
    assert await provider.fetch_balance(_target(fake), _fetch) == 120 - 20.5
    assert fake.requests[-2]["headers"]["authorization"] == f"Bearer {fake.key}"
    fake.hard_limit_usd, fake.total_usage, fake.has_payment_method = 5.0, 750.0, False
    assert await provider.fetch_balance(_target(fake, channel_type=8), _fetch) == -2.5
    assert await provider.fetch_balance(_target(fake, channel_type=43), _fetch) is None  # DeepSeek: not this way


@pytest.mark.parametrize("body", [b"[]", b"{", b'{"hard_limit_usd": "lots"}', b'{"total_usage": 1}',
                                  b'{"hard_limit_usd": true}'])
async def test_an_unreadable_answer_is_malformed(fake: FakeOpenAI, body: bytes) -> None:
    async def fetch(req: UpstreamRequest) -> bytes:
        return body

    with pytest.raises(GatewayError) as err:
        await OpenAIProvider().fetch_balance(_target(fake), fetch)  # type: ignore[misc]
    assert err.value.code == "bad_response_body"


async def test_the_fake_checks_the_usage_window(fake: FakeOpenAI) -> None:
    headers = {"Authorization": f"Bearer {fake.key}"}
    async with httpx.AsyncClient(base_url=fake.base_url, headers=headers) as http:
        usage = "/v1/dashboard/billing/usage"
        good = await http.get(usage, params={"start_date": "2026-01-01", "end_date": "2026-01-31"})
        assert good.status_code == 200 and good.json()["total_usage"] == fake.total_usage
        for params in ({}, {"start_date": "2026-01-01"}, {"start_date": "x", "end_date": "2026-01-02"},
                       {"start_date": "2025-01-01", "end_date": "2026-01-31"}):
            bad = await http.get(usage, params=params)
            assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
        assert (await http.get("/v1/dashboard/billing/nope")).status_code == 404
        assert (await http.get("/v1/dashboard/billing/subscription", headers={"Authorization": ""})).status_code == 401
