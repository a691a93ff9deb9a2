"""Malformed input on the relay never gives a 500: Hypothesis throws odd JSON at every
relay route, same-format and converted, regular and streaming."""

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
def stack(tmp_path_factory) -> Iterator[tuple[str, str]]:
    fake_anthropic = pytest.importorskip("faregate_adapter_anthropic.testing")
    loops = LoopThread()
    openai_up, anthropic_up = FakeOpenAI(), fake_anthropic.FakeAnthropic()
    loops.run(openai_up.start())
    loops.run(anthropic_up.start())
    proc = GatewayProcess(str(tmp_path_factory.mktemp("fuzz")))
    proc.start()
    try:
        with httpx.Client(base_url=proc.base_url, timeout=30) as admin:
            admin.post("/api/setup", json={"username": "root", "password": PASSWORD})
            user = admin.post("/api/user/login", json={"username": "root", "password": PASSWORD}).json()["data"]
            admin.headers["New-Api-User"] = str(user["id"])
            for kind, base, model in ((1, openai_up.base_url, "gpt-4o-mini"),
                                      (14, anthropic_up.base_url, "claude-sonnet-4-5")):
                channel = {"type": kind, "key": "k", "name": model, "base_url": base, "models": model,
                           "group": "default"}
                assert admin.post("/api/channel/", json={"mode": "single", "channel": channel}).json()["success"]
            token = admin.post("/api/token/", json={"name": "fuzz", "unlimited_quota": True}).json()["data"]
            key = "sk-" + admin.post(f"/api/token/{token['id']}/key").json()["data"]["key"]
        yield proc.base_url, key
    finally:
        proc.stop()
        loops.run(openai_up.stop())
        loops.run(anthropic_up.stop())
        loops.stop()


scalars = (st.none() | st.booleans() | st.integers(-10, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=10)
roles = st.sampled_from(["user", "assistant", "system", "tool", "developer", "wizard"]) | json_values
content = st.text(max_size=30) | json_values | st.lists(
    st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "image", "tool_use", "tool_result",
                                                    "thinking", "input_audio"]) | json_values},
                          optional={"text": json_values, "image_url": json_values, "source": json_values,
                                    "input": json_values, "id": json_values, "tool_use_id": json_values,
                                    "content": json_values}), max_size=3)
message = st.fixed_dictionaries({"role": roles, "content": content},
                                optional={"tool_calls": json_values, "tool_call_id": json_values})
bodies = st.fixed_dictionaries(
    {"model": st.sampled_from(["gpt-4o-mini", "claude-sonnet-4-5"]) | json_values,
     "messages": st.lists(message, max_size=3) | json_values},
    optional={"stream": st.booleans() | json_values, "max_tokens": st.integers(-5, 50) | json_values,
              "temperature": json_values, "tools": json_values, "tool_choice": json_values,
              "stream_options": json_values, "system": json_values, "thinking": json_values,
              "stop": json_values, "stop_sequences": json_values, "metadata": json_values})
paths = st.sampled_from(["/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens"])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies, path=paths)
def test_odd_bodies_never_500(stack, body, path):
    base, key = stack
    resp = httpx.post(base + path, json=body, timeout=30,
                      headers={"Authorization": f"Bearer {key}", "anthropic-version": "2023-06-01"})
    assert resp.status_code < 500 or resp.status_code in (502, 503, 504), (resp.status_code, resp.text[:300])
    kind = resp.headers.get("content-type", "").split(";")[0]
    assert kind in ("application/json", "text/event-stream"), kind
    if resp.status_code >= 400:
        assert resp.json()  # a clear error in the client's format


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=64) | st.text(max_size=64).map(str.encode), path=paths)
def test_raw_garbage_is_a_400(stack, raw, path):
    base, key = stack
    resp = httpx.post(base + path, content=raw, timeout=30, headers={"Authorization": f"Bearer {key}"})
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text[:200])
