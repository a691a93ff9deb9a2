"""Odd Responses bodies never give a 500, on every kind of channel (native, converted to
Anthropic Messages, converted to Chat Completions), and what the gateway itself wrote
upstream (the converted requests) is valid for the vendor."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faregate.testing.harness import GatewayProcess
from faregate_adapter_openai.testing import FakeOpenAI

PASSWORD = "fuzz-password"
MODELS = ("gpt-4o-mini", "claude-sonnet-4-5", "deepseek-chat")


class LoopThread:
    """An event loop in a thread, for the fake upstreams of a sync (Hypothesis) test."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, list[Any]]]:
    fake_anthropic = pytest.importorskip("faregate_adapter_anthropic.testing")
    loops = LoopThread()
    openai_up, anthropic_up = FakeOpenAI(), fake_anthropic.FakeAnthropic()
    loops.run(openai_up.start())
    loops.run(anthropic_up.start())
    proc = GatewayProcess(str(tmp_path_factory.mktemp("responses-fuzz")))
    proc.start()
    try:
        with httpx.Client(base_url=proc.base_url, timeout=30) as admin:
            admin.post("/api/setup", json={"username": "root", "password": PASSWORD})
            user = admin.post("/api/user/login", json={"username": "root", "password": PASSWORD}).json()["data"]
            admin.headers["New-Api-User"] = str(user["id"])
            # the whole table (a stored option replaces the built-in one): every model fuzzed, priced
            admin.put("/api/option/", json={"key": "ModelRatio", "value": '{"deepseek-chat": 1, "gpt-4o-mini": '
                                                                          '0.075, "claude-sonnet-4-5": 1.5}'})
            for kind, base, model in zip((1, 14, 43), (openai_up.base_url, anthropic_up.base_url,
                                                        openai_up.base_url), MODELS, strict=True):
                channel = {"type": kind, "key": "k", "name": model, "base_url": base, "models": model,
                           "group": "default"}
                assert admin.post("/api/channel/", json={"mode": "single", "channel": channel}).json()["success"]
            token = admin.post("/api/token/", json={"name": "fuzz", "unlimited_quota": True}).json()["data"]
            key = "sk-" + admin.post(f"/api/token/{token['id']}/key").json()["data"]["key"]
        yield proc.base_url, key, [openai_up, anthropic_up]
    finally:
        proc.stop()
        loops.run(openai_up.stop())
        loops.run(anthropic_up.stop())
        loops.stop()


scalars = (st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
parts = st.lists(st.fixed_dictionaries(
    {"type": st.sampled_from(["input_text", "output_text", "input_image", "refusal", "input_file"]) | json_values},
    optional={"text": st.text(max_size=12) | json_values, "image_url": json_values, "refusal": json_values,
              "detail": st.sampled_from(["low", "high", "auto"]) | json_values}), max_size=3)
items = (st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"])
                                | json_values, "content": st.text(max_size=20) | parts | json_values},
                               optional={"type": st.just("message")})
         | st.fixed_dictionaries(
             {"type": st.sampled_from(["function_call", "function_call_output", "reasoning", "item_reference",
                                       "web_search_call"]) | json_values},
             optional={"call_id": st.text(max_size=6) | json_values, "name": st.text(max_size=6) | json_values,
                       "arguments": st.just('{"a": 1}') | json_values, "output": st.text(max_size=6) | parts,
                       "summary": st.lists(st.fixed_dictionaries({"type": st.just("summary_text"),
                                                                  "text": st.text(max_size=8)}), max_size=2)
                       | json_values, "encrypted_content": json_values, "id": json_values})
         | json_values)
tools = st.lists(st.fixed_dictionaries({"type": st.sampled_from(["function", "web_search"]) | json_values},
                                       optional={"name": st.text(max_size=6) | json_values,
                                                 "parameters": st.just({"type": "object"}) | json_values,
                                                 "strict": json_values}), max_size=2)
# top-level types are mostly right (their checks have tests of their own): what goes deep is the
# odd content the conversions must carry or refuse
bodies = st.fixed_dictionaries(
    {"model": st.sampled_from(MODELS), "input": st.one_of(st.text(min_size=1, max_size=20),
                                                          st.lists(items, min_size=1, max_size=3))},
    optional={"stream": st.booleans(), "instructions": st.text(max_size=10), "tools": tools,
              "tool_choice": st.sampled_from(["auto", "required", "none"]) | st.fixed_dictionaries(
                  {"type": st.sampled_from(["function", "web_search_preview"])}, optional={"name": json_values}),
              "reasoning": st.fixed_dictionaries({}, optional={"effort": st.sampled_from(["low", "high", "none"])}),
              "text": st.fixed_dictionaries({}, optional={"format": st.fixed_dictionaries(
                  {"type": st.sampled_from(["text", "json_schema", "json_object"])},
                  optional={"name": st.text(max_size=6), "schema": st.just({"type": "object"}) | json_values})}),
              "max_output_tokens": st.integers(-5, 200), "temperature": st.floats(0, 2),
              "parallel_tool_calls": st.booleans(), "metadata": json_values,
              "previous_response_id": st.none() | st.text(max_size=6)})


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_odd_responses_bodies_never_500(stack: tuple[str, str, list[Any]], body: dict[str, Any]) -> None:
    base, key, fakes = stack
    resp = httpx.post(base + "/v1/responses", json=body, timeout=30, headers={"Authorization": f"Bearer {key}"})
    # 502 / 504: an upstream's failure; anything else 5xx (a 503 is what an exception before
    # the reservation becomes) is the gateway's own
    assert resp.status_code < 500 or resp.status_code in (502, 504), (resp.status_code, resp.text[:300])
    kind = resp.headers.get("content-type", "").split(";")[0]
    assert kind in ("application/json", "text/event-stream"), kind
    if resp.status_code >= 400:
        assert resp.json()["error"]["message"]  # a clear error in OpenAI's shape
    # what the gateway wrote itself (converted requests) is valid for the vendor; a native
    # request carries the client's own nested fields, which the upstream judges
    written = [v for fake in fakes for v in fake.violations if v["path"] != "/v1/responses"]
    assert written == [], written
