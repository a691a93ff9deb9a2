"""Fixtures for the fake OpenAI server's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest_asyncio

from faregate_adapter_openai.testing import FakeOpenAI


@pytest_asyncio.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    """A fake that requires a key and lists one more model, ``my-model``."""
    async with FakeOpenAI(api_key="sk-test-1234567890", models=["my-model"]) as server:
        yield server


@pytest_asyncio.fixture
async def sdk() -> AsyncIterator[Callable[..., Any]]:
    """``sdk(fake, **kw)``: an SDK client for a fake (with its key unless ``api_key`` is
    given), closed at teardown. Typed ``Any``: the tests send plain dicts where the SDK
    declares TypedDicts, and read optional fields they know are there."""
    clients: list[openai.AsyncOpenAI] = []

    def make(fake: FakeOpenAI, **kw: Any) -> Any:
        kw.setdefault("api_key", fake.key or "sk-any")
        client = openai.AsyncOpenAI(base_url=fake.base_url + "/v1", max_retries=0, **kw)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()
