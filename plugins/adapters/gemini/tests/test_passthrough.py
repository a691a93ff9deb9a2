"""Gemini client → Gemini channel: the native routes pass the client's bytes through (the
model travels in the URL), in every framing a stream may have; keys in every place a
Gemini client puts them; the channel's keys rotated; upstream errors, failover and broken
streams in Gemini's shape; billing from ``usageMetadata`` (cached and thinking tokens)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from faregate.testing.logs import consume_logs, error_logs
from faregate_adapter_gemini.testing import FLASH, PRO, FakeGemini, Fault
from faregate_adapter_gemini.testing.fixtures import FAKE_GEMINI_KEY
from faregate_adapter_gemini.testing.schema import validate_error, validate_response

BODY = {"contents": [{"role": "user", "parts": [{"text": "hello there"}]}],
        # snake_case and fields the canonical model has no home for travel untouched
        "generation_config": {"temperature": 0.2, "max_output_tokens": 200},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}]}
RAW = json.dumps(BODY, indent=1).encode()  # an unusual spelling: only a pass-through keeps it


def same_but_ids(ours: bytes, theirs: bytes) -> bool:
    """Equal bytes, but for the response ids (the fake numbers every answer)."""
    def ids(raw: bytes) -> list[str]:
        text = raw.decode()
        return sorted({text[i + 14:text.index('"', i + 14)] for i in range(len(text)) if text.startswith(
            '"responseId":"', i)})
    mine, other = ids(ours), ids(theirs)
    for a, b in zip(mine, other, strict=True):
        ours = ours.replace(a.encode(), b.encode())
    return ours == theirs


async def direct(fake: FakeGemini, path: str, raw: bytes) -> httpx.Response:
    async with httpx.AsyncClient(base_url=fake.base_url) as http:
        return await http.post(path, content=raw, headers={"x-goog-api-key": FAKE_GEMINI_KEY,
                                                           "content-type": "application/json"})


@pytest.mark.parametrize("version", ["v1", "v1beta"])
async def test_regular_answer_is_the_upstreams_bytes(deployed: Any, version: str) -> None:
    http = deployed.http()
    resp = await http.post(f"/{version}/models/{FLASH}:generateContent", params={"key": deployed.key}, content=RAW)
    assert resp.status_code == 200, resp.text
    sent = deployed.fake.requests[-1]
    assert sent["body"] == RAW and sent["path"] == f"/v1beta/models/{FLASH}:generateContent"
    assert sent["headers"]["x-goog-api-key"] == FAKE_GEMINI_KEY and "key" not in sent["query"]
    theirs = await direct(deployed.fake, sent["path"], RAW)
    assert same_but_ids(resp.content, theirs.content)
    validate_response(resp.json())
    (row,) = await consume_logs(deployed.server)
    usage = resp.json()["usageMetadata"]
    assert (row.prompt_tokens, row.completion_tokens) == (usage["promptTokenCount"], usage["candidatesTokenCount"])


def gemini_quota(usage_metadata: dict[str, Any], ratio: float, completion: float, cache: float) -> int:
    """new-api's charge of a Gemini answer, from its ``usageMetadata``: the cached part of the
    prompt (inside ``promptTokenCount``) at the cache ratio, thoughts priced as output."""
    prompt, cached = usage_metadata["promptTokenCount"], usage_metadata.get("cachedContentTokenCount", 0)
    output = usage_metadata["candidatesTokenCount"] + usage_metadata.get("thoughtsTokenCount", 0)
    return round((prompt - cached + cached * cache + output * completion) * ratio)


async def test_sse_stream_is_forwarded_as_it_came_and_billed_with_cache_and_thoughts(deployed: Any,
                                                                                     ratios: Any) -> None:
    deployed.fake.cached_tokens = 40
    await deployed.admin.set_option("CacheRatio", {PRO: 0.25})
    body = {"contents": [{"parts": [{"text": "stream with thinking"}]}],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": 512, "includeThoughts": True},
                                 "maxOutputTokens": 4096}}  # its own bound: nothing to add, the bytes go as they are
    raw = json.dumps(body).encode()
    http = deployed.http()
    path = f"/v1beta/models/{PRO}:streamGenerateContent"
    resp = await http.post(path, params={"alt": "sse"}, content=raw, headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
    assert deployed.fake.requests[-1]["query"] == {"alt": "sse"} and deployed.fake.requests[-1]["body"] == raw
    theirs = await direct(deployed.fake, path + "?alt=sse", raw)
    assert same_but_ids(resp.content, theirs.content)
    chunks = [json.loads(line[6:]) for line in resp.text.split("\r\n\r\n") if line.startswith("data: ")]
    for chunk in chunks:
        validate_response(chunk)
    final = chunks[-1]["usageMetadata"]
    assert final["cachedContentTokenCount"] == 40 and final["thoughtsTokenCount"] > 0
    (row,) = await consume_logs(deployed.server)
    other = json.loads(row.other)
    assert row.is_stream and row.prompt_tokens == final["promptTokenCount"]  # cached tokens included
    assert row.completion_tokens == final["candidatesTokenCount"] + final["thoughtsTokenCount"]
    assert (other["cache_tokens"], other["reasoning_tokens"], other["cache_ratio"]) == (
        40, final["thoughtsTokenCount"], 0.25)
    assert row.quota == gemini_quota(final, *ratios[PRO], cache=0.25)


async def test_json_array_stream_is_forwarded_as_one_array(deployed: Any) -> None:
    http = deployed.http()
    path = f"/v1/models/{FLASH}:streamGenerateContent"
    resp = await http.post(path, content=RAW, headers={"x-vendor-api-key": deployed.key})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/json")
    sent = deployed.fake.requests[-1]
    assert sent["query"] == {} and sent["path"] == f"/v1beta/models/{FLASH}:streamGenerateContent"
    theirs = await direct(deployed.fake, sent["path"], RAW)
    assert same_but_ids(resp.content, theirs.content)
    chunks = resp.json()
    assert isinstance(chunks, list) and len(chunks) > 1
    for chunk in chunks:
        validate_response(chunk)
    (row,) = await consume_logs(deployed.server)
    assert row.is_stream and row.completion_tokens == chunks[-1]["usageMetadata"]["candidatesTokenCount"]


async def test_model_mapping_changes_only_the_url(deployed: Any) -> None:
    await deployed.admin.add_channel(base_url=deployed.fake.base_url, type=24, key=FAKE_GEMINI_KEY, name="mapped",
                                     models="my-gemini", model_mapping=json.dumps({"my-gemini": FLASH}))
    await deployed.admin.set_option("ModelRatio", {"my-gemini": 0.2})
    resp = await deployed.http().post("/v1beta/models/my-gemini:generateContent", content=RAW,
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200, resp.text
    sent = deployed.fake.requests[-1]
    assert sent["path"] == f"/v1beta/models/{FLASH}:generateContent" and sent["body"] == RAW
    (row,) = await consume_logs(deployed.server)
    assert row.model_name == "my-gemini" and json.loads(row.other)["upstream_model_name"] == FLASH


@pytest.mark.parametrize("where", ["x-goog-api-key", "x-vendor-api-key", "key", "authorization"])
async def test_every_key_place(deployed: Any, where: str) -> None:
    headers = {where: deployed.key} if where.startswith("x-") else {}
    if where == "authorization":
        headers = {"Authorization": f"Bearer {deployed.key}"}
    params = {"key": deployed.key} if where == "key" else {}
    resp = await deployed.http().post(f"/v1beta/models/{FLASH}:generateContent", content=RAW, headers=headers,
                                      params=params)
    assert resp.status_code == 200, resp.text


async def test_no_or_wrong_key_is_401_in_geminis_shape(deployed: Any) -> None:
    http = deployed.http()
    for params in ({}, {"key": "AIzaWrongWrongWrong"}):
        resp = await http.post(f"/v1beta/models/{FLASH}:generateContent", content=RAW, params=params)
        assert resp.status_code == 401
        assert validate_error(resp.json())["error"]["status"] == "UNAUTHENTICATED"
        assert "AIzaWrong" not in resp.text
    assert deployed.fake.requests == []


async def test_channel_keys_rotate(gateway: Any, admin: Any) -> None:
    """Polling takes the keys in turn; random draws among the enabled keys: each of them is
    used, a disabled one never (24 draws of two miss one with a chance of 1 in 8 million)."""
    keys = [f"AIzaRotation{i}Key0123456789abcdefgh" for i in range(3)]
    drawn = [f"AIzaRandomDraw{i}Key0123456789abcdef" for i in range(3)]
    async with FakeGemini(key=keys[0], extra_keys=[*keys[1:], *drawn]) as fake:
        await admin.set_option("ModelRatio", {FLASH: 0.15, "gemini-drawn": 0.15})
        channel = {"type": 24, "key": "\n".join(keys), "name": "multi", "base_url": fake.base_url, "models": FLASH,
                   "group": "default"}
        await admin.ok("POST", "/api/channel/", json={"mode": "multi_to_single", "multi_key_mode": "polling",
                                                      "channel": channel})
        key = await admin.add_token(remain_quota=50_000_000)
        async with httpx.AsyncClient(base_url=gateway.base_url) as http:
            for _ in range(6):
                resp = await http.post(f"/v1beta/models/{FLASH}:generateContent", content=RAW,
                                       headers={"x-goog-api-key": key})
                assert resp.status_code == 200, resp.text
        assert fake.keys_seen == {k: 2 for k in keys}
        random_channel = {**channel, "key": "\n".join(drawn), "name": "drawn", "models": "gemini-drawn",
                          "model_mapping": json.dumps({"gemini-drawn": FLASH})}
        channel_id = await admin.ok("POST", "/api/channel/", json={
            "mode": "multi_to_single", "multi_key_mode": "random", "channel": random_channel})
        await admin.ok("POST", "/api/channel/multi_key/manage", json={"channel_id": channel_id,
                                                                       "action": "disable_key", "key_index": 1})
        fake.keys_seen.clear()
        async with httpx.AsyncClient(base_url=gateway.base_url) as http:
            for _ in range(24):
                resp = await http.post("/v1beta/models/gemini-drawn:generateContent", content=RAW,
                                       headers={"x-goog-api-key": key})
                assert resp.status_code == 200, resp.text
        assert set(fake.keys_seen) == {drawn[0], drawn[2]} and sum(fake.keys_seen.values()) == 24
        assert fake.violations == []


async def test_upstream_errors_keep_geminis_status(deployed: Any) -> None:
    deployed.fake.fail_next(400, "Invalid value at 'generation_config.top_k'")
    resp = await deployed.http().post(f"/v1beta/models/{FLASH}:generateContent", content=RAW,
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 400
    error = validate_error(resp.json())["error"]
    assert error["status"] == "INVALID_ARGUMENT" and error["message"].startswith("Invalid value at")
    deployed.fake.push_fault(Fault("status", status=429, retry_after="3"))
    limited = await deployed.http().post(f"/v1beta/models/{FLASH}:generateContent", content=RAW,
                                         headers={"x-goog-api-key": deployed.key})
    assert limited.status_code == 429 and limited.headers["retry-after"] == "3"
    assert validate_error(limited.json())["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert await consume_logs(deployed.server) == [] and len(await error_logs(deployed.server)) == 2


async def test_a_dead_channel_key_is_the_operators_problem(gateway: Any, admin: Any, fake_gemini: FakeGemini) -> None:
    await admin.set_option("ModelRatio", {FLASH: 0.15})
    await admin.add_channel(base_url=fake_gemini.base_url, type=24, key="AIzaDeadDeadDeadDead0123456789", models=FLASH)
    key = await admin.add_token(remain_quota=50_000_000)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post(f"/v1beta/models/{FLASH}:generateContent", content=RAW,
                               headers={"x-goog-api-key": key})
    assert resp.status_code == 401 and "AIzaDead" not in resp.text
    assert validate_error(resp.json())["error"]["status"] == "UNAUTHENTICATED"
    (row,) = await error_logs(gateway)
    assert row.content and "AIzaDead" not in row.content


async def test_server_errors_fail_over(deployed: Any) -> None:
    await deployed.admin.add_channel(base_url=deployed.fake.base_url, type=24, key=FAKE_GEMINI_KEY, name="second",
                                     models=FLASH)
    await deployed.admin.set_option("RetryTimes", "1")
    deployed.fake.push_fault(Fault("overloaded"))
    resp = await deployed.http().post(f"/v1beta/models/{FLASH}:streamGenerateContent?alt=sse", content=RAW,
                                      headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200 and resp.text.startswith("data: ")
    (row,) = await consume_logs(deployed.server)
    assert len(json.loads(row.other)["admin_info"]["use_channel"]) == 2


@pytest.mark.parametrize("alt", ["sse", "json"])
async def test_a_stream_broken_midway_ends_with_an_error_in_its_framing(deployed: Any, alt: str) -> None:
    deployed.fake.push_fault(Fault("stream_error", after_chunks=2, delay=0.05))
    resp = await deployed.http().post(f"/v1beta/models/{FLASH}:streamGenerateContent", params={"alt": alt},
                                      content=RAW, headers={"x-goog-api-key": deployed.key})
    assert resp.status_code == 200
    if alt == "sse":
        events = [json.loads(e[6:]) for e in resp.text.split("\r\n\r\n") if e.startswith("data: ")]
    else:
        events = resp.json()  # still one well-formed array
    assert len(events) == 3 and validate_error(events[-1])["error"]["code"] == 500
    for chunk in events[:-1]:
        validate_response(chunk)
    (row,) = await consume_logs(deployed.server)  # what was streamed is billed, once
    assert json.loads(row.other)["end_reason"] == "upstream_error"


async def test_a_cut_json_array_is_closed(deployed: Any) -> None:
    deployed.fake.push_fault(Fault("stream_cut", after_chunks=2))
    resp = await deployed.http().post(f"/v1beta/models/{FLASH}:streamGenerateContent", content=RAW,
                                      headers={"x-goog-api-key": deployed.key})
    events = resp.json()
    assert validate_error(events[-1])["error"]["status"] in ("UNAVAILABLE", "INTERNAL")
    (row,) = await consume_logs(deployed.server)
    assert json.loads(row.other)["end_reason"] == "eof"


async def test_a_channel_set_to_convert_gets_the_canonical_rendering(deployed: Any) -> None:
    await deployed.admin.add_channel(base_url=deployed.fake.base_url, type=24, key=FAKE_GEMINI_KEY, name="convert",
                                     models="gemini-converted", model_mapping=json.dumps({"gemini-converted": FLASH}),
                                     setting=json.dumps({"force_convert": True, "safety_threshold": ""}))
    await deployed.admin.set_option("ModelRatio", {"gemini-converted": 0.1})
    for alt in ("sse", "json"):
        resp = await deployed.http().post("/v1beta/models/gemini-converted:streamGenerateContent", content=RAW,
                                          params={"alt": alt}, headers={"x-goog-api-key": deployed.key})
        assert resp.status_code == 200, resp.text
        sent = deployed.fake.requests[-1]
        assert sent["query"] == {"alt": "sse"}  # converted: the channel is always read as SSE
        assert sent["json"] == {"contents": [{"role": "user", "parts": [{"text": "hello there"}]}],
                                "generationConfig": {"temperature": 0.2, "maxOutputTokens": 200}}
        chunks = (resp.json() if alt == "json"
                  else [json.loads(e[6:]) for e in resp.text.split("\r\n\r\n") if e.startswith("data: ")])
        assert "".join(p.get("text", "") for c in chunks for p in c["candidates"][0]["content"]["parts"]).startswith(
            "Hello from fake-gemini")
