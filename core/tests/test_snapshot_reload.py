"""A change to a key reloads it in every worker's snapshot (faregate.state.snapshot); while its
row is read, requests with the key still find it (the cluster test caught a 401 mid-run when
the key's entry was taken out before the read)."""

from __future__ import annotations

import asyncio

from faregate.db import models as m
from faregate.testing.harness import AdminClient, GatewayServer


async def test_a_key_stays_known_while_it_reloads(gateway: GatewayServer, admin: AdminClient) -> None:
    await admin.add_token(name="reloaded")
    snap = gateway.gateway.snapshot
    row = await m.Token.get(name="reloaded")
    assert row.key_hash in snap.tokens_by_hash
    await m.Token.filter(id=row.id).update(name="renamed")
    reload = asyncio.ensure_future(snap.load_token(row.id))
    await asyncio.sleep(0)  # the reload started and waits for its row
    assert not reload.done()
    assert snap.tokens_by_hash[row.key_hash].name == "reloaded", "the old entry serves meanwhile"
    await reload
    assert snap.tokens_by_hash[row.key_hash].name == "renamed"
    assert snap.tokens_by_id[row.id] is snap.tokens_by_hash[row.key_hash]
