"""Reading a test gateway's log rows (after writing its pending batch), so plugin
tests need not reach into the core's storage models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from faregate.db import models as m

if TYPE_CHECKING:
    from faregate.testing.harness import GatewayServer

Log = m.Log
__all__ = ["Log", "consume_logs", "error_logs"]


async def consume_logs(server: GatewayServer) -> list[m.Log]:
    """The consume rows (type 2), oldest first."""
    await server.gateway.ledger.flush()
    return list(await m.Log.filter(type=m.LOG_CONSUME).order_by("id"))


async def error_logs(server: GatewayServer) -> list[m.Log]:
    """The error rows (type 5), oldest first."""
    await server.gateway.ledger.flush()
    return list(await m.Log.filter(type=m.LOG_ERROR).order_by("id"))
