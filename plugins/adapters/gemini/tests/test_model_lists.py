"""The model lists (the spec's three rules for ``GET /v1/models``, and the native namespace's
own lists): ``GET /v1beta/models`` in Gemini's shape with ``pageSize`` / ``pageToken`` →
``nextPageToken`` paging, ``GET /v1beta/openai/models`` in the chat-completions shape, and
``GET /v1/models`` in Gemini's shape when the caller uses ``x-goog-api-key`` (or the
neutral ``x-vendor-api-key``) or ``?key=``, Anthropic's with its version header, OpenAI's
otherwise. Every native answer is checked against Gemini's ``ListModelsResponse``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from faregate_adapter_gemini.testing.schema import validate_error, validate_model, validate_model_list

MODELS = [f"gemini-fake-{i}" for i in range(5)]


@pytest.fixture
async def key(gateway: Any, admin: Any, fake_gemini: Any) -> str:
    await admin.add_channel(base_url=fake_gemini.base_url, models=",".join(MODELS), type=24, key="k")
    return str(await admin.add_token(remain_quota=50_000_000))


async def get(gateway: Any, path: str, **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        return await http.get(path, **kwargs)


async def test_native_list_pages(gateway: Any, key: str) -> None:
    whole = validate_model_list((await get(gateway, "/v1beta/models", params={"key": key})).json())
    names = [m["name"] for m in whole["models"]]
    assert sorted(names) == [f"models/{m}" for m in MODELS] and whole["nextPageToken"] == ""
    assert whole["models"][0]["supportedGenerationMethods"][0] == "generateContent"
    seen: list[str] = []
    token = ""
    for _ in range(len(MODELS)):
        params = {"pageSize": "2", **({"pageToken": token} if token else {})}
        page = validate_model_list((await get(gateway, "/v1beta/models", params=params,
                                              headers={"x-goog-api-key": key})).json())
        seen += [m["name"] for m in page["models"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert seen == names and len(seen) == len(set(seen))
    for size in ("0", "5000"):  # unset, and above the 1000 maximum: both serve
        page = (await get(gateway, "/v1beta/models", params={"pageSize": size, "key": key})).json()
        assert len(page["models"]) == len(MODELS)


@pytest.mark.parametrize("params,field", [({"pageSize": "-1"}, "pageSize"), ({"pageSize": "ten"}, "pageSize"),
                                          ({"pageToken": "%%%not-ours"}, "pageToken")])
async def test_bad_paging_is_a_400_in_geminis_shape(gateway: Any, key: str, params: dict[str, str],
                                                    field: str) -> None:
    resp = await get(gateway, "/v1beta/models", params={**params, "key": key})
    assert resp.status_code == 400
    error = validate_error(resp.json())["error"]
    assert error["details"][0]["fieldViolations"][0]["field"] == field


async def test_openai_list_under_the_native_namespace(gateway: Any, key: str) -> None:
    body = (await get(gateway, "/v1beta/openai/models", headers={"Authorization": f"Bearer {key}"})).json()
    assert body["object"] == "list" and sorted(m["id"] for m in body["data"]) == MODELS
    assert all(m["object"] == "model" for m in body["data"])


@pytest.mark.parametrize("how", ["bearer", "anthropic", "x-goog-api-key", "x-vendor-api-key", "key"])
async def test_v1_models_speaks_the_callers_format(gateway: Any, key: str, how: str) -> None:
    headers: dict[str, str] = {"Authorization": f"Bearer {key}"} if how == "bearer" else {}
    params: dict[str, str] = {}
    if how == "anthropic":
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    elif how.startswith("x-"):
        headers = {how: key}
    elif how == "key":
        params = {"key": key}
    body = (await get(gateway, "/v1/models", headers=headers, params=params)).json()
    if how == "bearer":
        assert body["object"] == "list" and sorted(m["id"] for m in body["data"]) == MODELS
    elif how == "anthropic":
        assert "has_more" in body and sorted(m["id"] for m in body["data"]) == MODELS
    else:
        assert sorted(m["name"] for m in validate_model_list(body)["models"]) == [f"models/{m}" for m in MODELS]


async def test_one_model(gateway: Any, key: str) -> None:
    for path in (f"/v1beta/models/{MODELS[0]}", f"/v1/models/{MODELS[0]}"):
        model = validate_model((await get(gateway, path, params={"key": key})).json())
        assert model["name"] == f"models/{MODELS[0]}"
    missing = await get(gateway, "/v1beta/models/gemini-none", headers={"x-goog-api-key": key})
    assert missing.status_code == 404
    assert validate_error(missing.json())["error"]["status"] == "NOT_FOUND"


async def test_lists_need_a_key(gateway: Any, key: str) -> None:
    resp = await get(gateway, "/v1beta/models", params={"key": "AIzaNotAKeyOfOursAtAll0000"})
    assert resp.status_code == 401 and validate_error(resp.json())["error"]["status"] == "UNAUTHENTICATED"
    assert "AIzaNotAKey" not in resp.text
