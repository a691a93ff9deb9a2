"""The OpenAI provider's balances (new-api's: OpenAI's billing endpoints for OpenAI and Custom
channels; DeepSeek's, OpenRouter's, SiliconFlow's and Moonshot's own balance APIs) and the
fake's endpoints it reads."""

from __future__ import annotations

import datetime

import httpx
import pytest

from faregate.api import GatewayError, UpstreamRequest, UpstreamTarget
from faregate_adapter_openai.billing import usage_window
from faregate_adapter_openai.provider import DEFAULT_YUAN_PER_DOLLAR, OpenAIProvider
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
    assert await provider.fetch_balance(_target(fake, channel_type=26), _fetch) is None  # Zhipu: no balance API


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


# ---- the vendors' own balance APIs ---------------------------------------------------------
async def test_deepseek_reports_dollars_else_yuan_converted(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider()
    assert provider.fetch_balance is not None
    fake.balances.deepseek = {"CNY": 73.0}
    assert await provider.fetch_balance(_target(fake, 43), _fetch) == pytest.approx(73.0 / DEFAULT_YUAN_PER_DOLLAR)
    sent = fake.requests[-1]
    assert sent["path"] == "/user/balance" and sent["headers"]["authorization"] == f"Bearer {fake.key}"
    fake.balances.deepseek = {"CNY": 73.0, "USD": 12.5}
    assert await provider.fetch_balance(_target(fake, 43), _fetch) == 12.5
    # a base URL given with its /v1 root: the balance sits beside the root, not under it
    with_root = UpstreamTarget(base_url=fake.base_url + "/v1", key=fake.key or "", model="", stream=False,
                               channel_type=43)
    assert await provider.fetch_balance(with_root, _fetch) == 12.5 and fake.requests[-1]["path"] == "/user/balance"
    fake.balances.deepseek = {"EUR": 3.0}
    with pytest.raises(GatewayError, match="no balance in USD or CNY"):
        await provider.fetch_balance(_target(fake, 43), _fetch)


async def test_openrouter_reports_its_credits_left(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider()
    assert provider.fetch_balance is not None
    assert await provider.fetch_balance(_target(fake, 20), _fetch) == 100.5 - 25.75
    assert fake.requests[-1]["path"] == "/v1/credits"  # https://openrouter.ai/api + /v1/credits


async def test_siliconflow_and_moonshot_report_yuan(fake: FakeOpenAI) -> None:
    provider = OpenAIProvider()
    assert provider.fetch_balance is not None
    assert await provider.fetch_balance(_target(fake, 40), _fetch) == pytest.approx(88.88 / DEFAULT_YUAN_PER_DOLLAR)
    assert fake.requests[-1]["path"] == "/v1/user/info"
    assert await provider.fetch_balance(_target(fake, 25), _fetch) == pytest.approx(49.58 / DEFAULT_YUAN_PER_DOLLAR)
    assert fake.requests[-1]["path"] == "/v1/users/me/balance"
    # their "not OK" envelope (HTTP 200): an error naming the code, not the vendor's words
    fake.balances.refusing = True
    for channel_type, code in ((40, 30001), (25, 5)):
        with pytest.raises(GatewayError) as refused:
            await provider.fetch_balance(_target(fake, channel_type), _fetch)
        assert refused.value.message.endswith(f"(code {code})") and "insufficient" not in refused.value.message


async def test_moonshot_s_international_platform_keeps_dollars() -> None:
    async def fetch(req: UpstreamRequest) -> bytes:
        assert req.url == "https://api.moonshot.ai/v1/users/me/balance"
        return b'{"code": 0, "data": {"available_balance": 9.5}, "scode": "0x0", "status": true}'

    provider = OpenAIProvider()
    assert provider.fetch_balance is not None
    target = UpstreamTarget(base_url="https://api.moonshot.ai", key="sk-m", model="", stream=False, channel_type=25)
    assert await provider.fetch_balance(target, fetch) == 9.5


@pytest.mark.parametrize(("channel_type", "body"), [
    (43, b'{"balance_infos": [{"currency": "USD", "total_balance": "lots"}]}'), (43, b'{"balance_infos": 3}'),
    (20, b'{"data": {"total_credits": 5}}'), (20, b"[]"), (40, b'{"code": 20000, "data": {"totalBalance": null}}'),
    (25, b'{"code": 0, "status": true, "data": {"available_balance": "NaN"}}')])
async def test_a_vendor_answer_of_the_wrong_shape_is_malformed(channel_type: int, body: bytes) -> None:
    async def fetch(req: UpstreamRequest) -> bytes:
        return body

    target = UpstreamTarget(base_url="https://vendor.example", key="sk-v", model="", stream=False,
                            channel_type=channel_type)
    with pytest.raises(GatewayError) as err:
        await OpenAIProvider().fetch_balance(target, fetch)  # type: ignore[misc]
    assert err.value.code == "bad_response_body"
