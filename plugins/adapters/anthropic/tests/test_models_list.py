"""Anthropic-format ``GET /v1/models`` (issue 9, item 8): cursor paging (``limit``,
``after_id``, ``before_id``) and entries with every field of Anthropic's ModelInfo,
checked with the official SDK and against the published schema."""

from __future__ import annotations

import anthropic
import httpx
import pytest

from faregate_adapter_anthropic.testing.schema import validate_error, validate_model_list

MODELS = [f"model-{i}" for i in range(5)]
HEADERS = {"anthropic-version": "2023-06-01"}


@pytest.fixture
async def key(gateway, admin, fake_anthropic) -> str:
    await admin.add_channel(base_url=fake_anthropic.base_url, models=",".join(MODELS), type=14, key="k")
    return str(await admin.add_token(remain_quota=50_000_000))


async def page(gateway, key: str, **params) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        return await http.get("/v1/models", params=params, headers={**HEADERS, "x-api-key": key})


async def test_pages_follow_anthropics_cursors(gateway, key):
    resp = await page(gateway, key)
    body = validate_model_list(resp.json())
    listed = [m["id"] for m in body["data"]]
    assert sorted(listed) == MODELS and body["has_more"] is False
    assert (body["first_id"], body["last_id"]) == (listed[0], listed[-1])
    entry = body["data"][0]
    assert entry["max_input_tokens"] is None and entry["max_tokens"] is None and entry["capabilities"] is None

    first = validate_model_list((await page(gateway, key, limit=2)).json())
    assert [m["id"] for m in first["data"]] == listed[:2] and first["has_more"] is True
    second = validate_model_list((await page(gateway, key, limit=2, after_id=first["last_id"])).json())
    assert [m["id"] for m in second["data"]] == listed[2:4] and second["has_more"] is True
    last = validate_model_list((await page(gateway, key, limit=2, after_id=second["last_id"])).json())
    assert [m["id"] for m in last["data"]] == listed[4:] and last["has_more"] is False
    back = validate_model_list((await page(gateway, key, limit=2, before_id=last["first_id"])).json())
    assert [m["id"] for m in back["data"]] == listed[2:4] and back["has_more"] is True
    start = validate_model_list((await page(gateway, key, limit=3, before_id=listed[2])).json())
    assert [m["id"] for m in start["data"]] == listed[:2] and start["has_more"] is False
    gone = validate_model_list((await page(gateway, key, after_id="no-such-model")).json())
    assert gone == {"data": [], "first_id": None, "last_id": None, "has_more": False}


@pytest.mark.parametrize("limit", ["0", "1001", "ten", "-1"])
async def test_bad_limit_is_a_400_in_anthropics_shape(gateway, key, limit):
    resp = await page(gateway, key, limit=limit)
    assert resp.status_code == 400
    body = validate_error(resp.json())
    assert body["error"]["type"] == "invalid_request_error" and "limit" in body["error"]["message"]


async def test_sdk_pages_through_the_list(gateway, key):
    async with anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key=key, max_retries=0,
                                        _strict_response_validation=True) as client:
        one = await client.models.list(limit=1)
        assert len(one.data) == 1 and one.has_more is True
        seen = [m.id async for m in client.models.list(limit=2)]  # auto-pagination over after_id
        assert sorted(seen) == MODELS and len(seen) == len(set(seen))
