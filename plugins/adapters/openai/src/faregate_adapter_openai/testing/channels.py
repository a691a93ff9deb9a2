"""A fake OpenAI upstream behind a gateway: the channel to it and a key, made in one step (the
set-up of test modules that share one gateway, `module_admin`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from faregate.testing.harness import AdminClient
from faregate_adapter_openai.testing.server import FakeOpenAI


@asynccontextmanager
async def upstream_channel(admin: AdminClient, models: str, *,
                           remain_quota: int = 5_000_000) -> AsyncIterator[tuple[FakeOpenAI, str]]:
    """A :class:`FakeOpenAI`, a channel to it serving ``models`` and a key with ``remain_quota``."""
    async with FakeOpenAI() as fake:
        await admin.add_channel(base_url=fake.base_url, models=models)
        yield fake, await admin.add_token(remain_quota=remain_quota)
