"""OpenAI's smaller endpoints through the gateway with the official ``openai`` SDK (strict
response validation, async and sync): ``POST /v1/moderations`` (new-api's default model when
none is given, billed on the input estimate since moderation answers carry no usage), the
paths new-api answers 501 as the SDK sees them, and the legacy billing pair in OpenAI's old
shapes. Bad moderation input and every path answered 501 (after the key is checked):
test_relay_openai_endpoints_refused.py."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import openai
import pytest

from faregate_adapter_openai.testing.answers import answer_of, check_answer
from faregate_adapter_openai.testing.schema import MODERATIONS_RESPONSE, validate


@pytest.fixture
async def client(gateway: Any, admin: Any, fake_openai: Any) -> Any:
    await admin.add_channel(base_url=fake_openai.base_url,
                            models="omni-moderation-latest,text-moderation-stable")
    key = await admin.add_token(remain_quota=5_000_000)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    sdk.key = key  # type: ignore[attr-defined]
    yield sdk
    await sdk.close()



async def test_moderation_is_relayed_and_billed_on_the_estimate(client: Any, gateway: Any, fake_openai: Any) -> None:
    result = await client.moderations.create(model="omni-moderation-latest",
                                             input=["I will kill the process", "a calm sentence"])
    assert [r.flagged for r in result.results] == [True, False]
    assert result.results[0].categories.violence is True
    (row,) = await gateway.consume_logs()
    assert row.model_name == "omni-moderation-latest" and row.prompt_tokens > 0 and row.quota >= 1
    assert '"usage_source":"estimated"' in row.other.replace(" ", "")


async def test_the_sync_sdk_works_too(client: Any, gateway: Any, fake_openai: Any) -> None:
    def call() -> Any:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=client.key, max_retries=0,
                           _strict_response_validation=True) as sync:
            return sync.moderations.create(input="I will kill the process")  # no model: new-api's default

    result = await asyncio.to_thread(call)
    assert result.results[0].flagged and result.model == "text-moderation-stable"
    (row,) = await gateway.consume_logs()
    assert row.model_name == "text-moderation-stable" and row.quota >= 1


async def test_moderation_without_a_model_uses_new_apis_default(client: Any, gateway: Any,
                                                                fake_openai: Any) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/moderations", json={"input": "hello"},
                               headers={"Authorization": f"Bearer {client.key}"})
    assert resp.status_code == 200, resp.text
    validate(MODERATIONS_RESPONSE, resp.json())
    assert fake_openai.requests[-1]["json"]["model"] == "text-moderation-stable"


async def test_the_sdk_sees_501_as_an_api_error(client: Any) -> None:
    with pytest.raises(openai.APIStatusError) as raised:
        await client.files.list()
    assert raised.value.status_code == 501 and raised.value.type == "new_api_error"


async def billing(gateway: Any, key: str, which: str, prefix: str = "",
                  window: tuple[str, str] | None = ("2026-11-01", "2026-11-25")) -> Any:
    """The answer, held to OpenAI's legacy shape (new-api's) of ``which``."""
    params = {"start_date": window[0], "end_date": window[1]} if window else None
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.get(f"{prefix}/dashboard/billing/{which}", headers={"Authorization": f"Bearer {key}"},
                              params=params)
    assert resp.status_code == 200, resp.text
    return check_answer(answer_of(resp))


async def test_legacy_billing_endpoints_report_the_keys_quota(gateway: Any, admin: Any, fake_openai: Any) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="omni-moderation-latest")
    key = await admin.add_token(remain_quota=1_000_000)  # $2 at 500,000 units per dollar
    for prefix in ("", "/v1"):
        sub = await billing(gateway, key, "subscription", prefix)
        assert sub == {"object": "billing_subscription", "has_payment_method": True, "soft_limit_usd": 2.0,
                       "hard_limit_usd": 2.0, "system_hard_limit_usd": 2.0, "access_until": 0}
        assert await billing(gateway, key, "usage", prefix) == {"object": "list", "total_usage": 0.0}
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                             _strict_response_validation=True)
    try:
        await sdk.moderations.create(model="omni-moderation-latest", input="some words to moderate here")
    finally:
        await sdk.close()
    (row,) = await gateway.consume_logs()  # flushed: the key's used quota is written
    spent = pytest.approx(row.quota / 500_000 * 100)
    # the dates are read by neither new-api nor Faregate: all the key spent, whatever the window
    # (one long past, one to come, none at all)
    for window in (("2026-11-01", "2026-11-25"), ("2020-01-01", "2020-01-31"), ("2099-01-01", "2099-12-31"), None):
        assert (await billing(gateway, key, "usage", window=window))["total_usage"] == spent, window
    assert (await billing(gateway, key, "subscription"))["hard_limit_usd"] == pytest.approx(2.0)

    unlimited = await admin.add_token(unlimited=True, name="unlimited")
    assert (await billing(gateway, unlimited, "subscription"))["hard_limit_usd"] == 100_000_000
    await admin.set_option("general_setting.quota_display_type", "CNY")
    assert (await billing(gateway, key, "subscription"))["hard_limit_usd"] == pytest.approx(2.0 * 7.3)
    await admin.set_option("general_setting.quota_display_type", "USD")
    await admin.set_option("DisplayTokenStatEnabled", "false")  # the owner's balance: root's $200 and what it spent
    owner = await billing(gateway, unlimited, "subscription")
    assert owner["hard_limit_usd"] == pytest.approx(200.0, abs=0.01) and owner["access_until"] == 0
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/v1/dashboard/billing/subscription")).status_code == 401
