"""Running something between two statements of the code under test: what another worker (a
flush, a lease taken by a request in flight) could do at that moment, made to happen there,
so a read-then-write race is tested every time rather than once in many runs; and a billing
flush's connection dying at its commit (:func:`flush_dying_at_commit`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest


def after_select(monkeypatch: pytest.MonkeyPatch, action: Callable[[], Awaitable[object]], *,
                 containing: str = "", skip: int = 0) -> list[Callable[[], Awaitable[object]]]:
    """Run ``action`` once, right after the next ``SELECT`` (holding ``containing``) that the
    default tortoise connection's client runs, once its lock is free again; with ``skip``, after
    the one that many such ``SELECT``s later. Returns the list that holds ``action`` until it
    ran: empty afterwards (a test asserts it ran); put another action in it to run it after the
    next such ``SELECT``."""
    from tortoise import connections

    pending: list[Callable[[], Awaitable[object]]] = [action, *[_nothing] * skip]  # taken from its end
    client = type(connections.get("default"))

    def wrapped(name: str) -> Any:
        real = getattr(client, name)

        async def run(self: Any, query: str, values: Any = None) -> Any:
            result = await real(self, query, values)
            if pending and containing in query and query.lstrip().upper().startswith("SELECT"):
                await pending.pop()()
            return result
        return run

    for name in ("execute_query", "execute_query_dict"):
        monkeypatch.setattr(client, name, wrapped(name))
    return pending


async def _nothing() -> None:
    """A ``SELECT`` passed over (``after_select``'s ``skip``)."""


def flush_dying_at_commit(monkeypatch: pytest.MonkeyPatch, *, landed: bool) -> list[int]:
    """The billing flush's next transaction (``faregate.billing.pending.in_transaction``) loses
    its connection at the commit: after it (``landed``, the server committed) or before (rolled
    back); later ones run as they are. Returns a list that is empty once the failure happened."""
    from tortoise.transactions import in_transaction

    failures = [1]

    @contextlib.asynccontextmanager
    async def transaction() -> AsyncIterator[Any]:
        async with in_transaction() as conn:
            yield conn
            if failures and not landed:
                failures.pop()
                raise ConnectionResetError("the server closed the connection")  # rolled back
        if failures:
            failures.pop()
            raise ConnectionResetError("the server closed the connection")  # after the commit

    monkeypatch.setattr("faregate.billing.pending.in_transaction", transaction)
    return failures
