"""``POST /v1/alpha/search`` (Codex's standalone web search): relayed only to channels whose
type declares it (the Codex channel type, 57, with its OAuth key), the body passed through
unchanged but for a mapped model, the answer unchanged; a model only other channels serve
gets a 400 naming the endpoint; billed at the model's price per call, else on the estimate;
bad input and a malformed Codex key answered clearly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from faregate import jsonutil
from faregate.testing.fake_server import assert_no_violations
from faregate_adapter_openai.codex import CODEX_TYPE
from faregate_adapter_openai.testing.alpha_search import PATH
from faregate_adapter_openai.testing.answers import answer_of, check_answer
from faregate_adapter_openai.testing.schema import validate_error
from faregate_adapter_openai.testing.server import FakeOpenAI

MODEL = "gpt-5-codex"
FAKE_KEY = "sk-fake-codex-access"


def codex_key(token: str = FAKE_KEY, account: str = "acct-123") -> str:
    return jsonutil.dumps_str({"access_token": token, "account_id": account, "refresh_token": "rt-ignored"})


@pytest.fixture
async def fake(request: pytest.FixtureRequest) -> AsyncIterator[FakeOpenAI]:
    """A fake whose bearer credential is the Codex key's access token."""
    async with FakeOpenAI(api_key=FAKE_KEY) as server:
        yield server
    assert_no_violations(server, request.node, "Codex")


@pytest.fixture
async def key(gateway: Any, admin: Any) -> str:
    await admin.set_option("ModelPrice", {MODEL: 0.01})
    await admin.set_option("ModelRatio", {"gpt-4o-mini": 0.075, "gpt-5-mini": 0.125})
    token: str = await admin.add_token(remain_quota=5_000_000)
    return token


async def search(gateway: Any, key: str, body: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        return await http.post("/v1/alpha/search", json=body, headers={"Authorization": f"Bearer {key}"})



async def test_search_is_relayed_to_a_codex_channel_with_its_oauth_headers(gateway: Any, admin: Any, key: str,
                                                                          fake: Any) -> None:
    await admin.add_channel(base_url=fake.base_url, models=MODEL, type=CODEX_TYPE, key=codex_key(), name="codex")
    body = {"model": MODEL, "id": "req-1", "query": {"q": "weather in Paris"}, "settings": {"future": [1, {"x": 0}]}}
    resp = await search(gateway, key, body)
    assert resp.status_code == 200, resp.text
    answer = check_answer(answer_of(resp))  # the shape Codex reads
    assert answer["model"] == MODEL and len(answer["results"]) == 3 and answer["output"]
    (sent,) = fake.requests
    assert sent["path"] == PATH and sent["json"] == body  # unknown fields and nested values kept
    assert sent["headers"]["authorization"] == f"Bearer {FAKE_KEY}"
    assert sent["headers"]["chatgpt-account-id"] == "acct-123"
    (row,) = await gateway.consume_logs()
    assert row.model_name == MODEL and row.quota == round(0.01 * 500_000)  # the price per call


async def test_a_mapped_model_is_renamed_and_a_token_priced_model_billed_on_the_estimate(
        gateway: Any, admin: Any, key: str, fake: Any) -> None:
    await admin.add_channel(base_url=fake.base_url, models="gpt-5-mini", type=CODEX_TYPE, key=codex_key(),
                            model_mapping='{"gpt-5-mini": "gpt-5-codex-mini"}')
    resp = await search(gateway, key, {"model": "gpt-5-mini", "query": "x"})
    assert resp.status_code == 200, resp.text
    assert fake.requests[-1]["json"] == {"model": "gpt-5-codex-mini", "query": "x"}
    (row,) = await gateway.consume_logs()
    assert row.model_name == "gpt-5-mini" and row.prompt_tokens > 0 and row.quota >= 1
    assert jsonutil.loads(row.other)["usage_source"] == "estimated"


async def test_only_channels_that_declare_search_serve_it(gateway: Any, admin: Any, key: str, fake: Any,
                                                         fake_openai: Any) -> None:
    # an OpenAI channel of higher priority for the same model is never tried for search
    await admin.add_channel(base_url=fake_openai.base_url, models=f"{MODEL},gpt-4o-mini", name="openai", priority=10)
    await admin.add_channel(base_url=fake.base_url, models=MODEL, type=CODEX_TYPE, key=codex_key(), name="codex")
    assert (await search(gateway, key, {"model": MODEL, "query": "q"})).status_code == 200
    assert not [r for r in fake_openai.requests if "search" in r["path"]]
    refused = await search(gateway, key, {"model": "gpt-4o-mini", "query": "q"})
    assert refused.status_code == 400
    error = validate_error(refused.json())["error"]
    assert error["code"] == "endpoint_not_supported" and "alpha_search" in error["message"]


@pytest.mark.parametrize(("body", "param"), [
    ({"query": "q"}, "model"),
    ({"model": "", "query": "q"}, "model"),
    ({"model": MODEL, "id": 7}, "id"),
    ({"model": MODEL, "stream": True}, "stream"),
    ({"model": MODEL, "max_output_tokens": 0}, "max_output_tokens"),
])
async def test_bad_input_is_a_400_naming_the_field(gateway: Any, admin: Any, key: str, fake: Any,
                                                   body: dict[str, Any], param: str) -> None:
    await admin.add_channel(base_url=fake.base_url, models=MODEL, type=CODEX_TYPE, key=codex_key())
    resp = await search(gateway, key, body)
    assert resp.status_code == 400
    assert validate_error(resp.json())["error"]["param"] == param
    assert not fake.requests


@pytest.mark.parametrize("bad_key", ["not json", '["a"]', '{"access_token": "t"}',
                                     '{"access_token": "", "account_id": "a"}'])
async def test_a_malformed_codex_key_fails_over_and_names_no_secret(gateway: Any, admin: Any, key: str, fake: Any,
                                                                    bad_key: str, caplog: Any) -> None:
    await admin.set_option("RetryTimes", 1)  # the broken channel is an attempt, as in new-api
    await admin.add_channel(base_url=fake.base_url, models=MODEL, type=CODEX_TYPE, key=bad_key, name="broken",
                            priority=10)
    await admin.add_channel(base_url=fake.base_url, models=MODEL, type=CODEX_TYPE, key=codex_key(), name="good")
    resp = await search(gateway, key, {"model": MODEL, "query": "q"})
    assert resp.status_code == 200, resp.text
    assert len(fake.requests) == 1  # the broken channel never reached the upstream
    assert bad_key not in caplog.text and "rt-ignored" not in caplog.text
