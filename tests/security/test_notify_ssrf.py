"""A user's notification URLs (issue 17: the webhook of quota warnings, and bark / gotify)
are theirs to choose, so the gateway must not become their way into its own network: on
save, a URL whose host is a loopback, private, link-local or cloud metadata address (in
any spelling) or name is a 400 naming the field, nothing stored; private ones are allowed
only by ``FAREGATE_NOTIFY_PRIVATE_ADDRESSES=allow``, metadata and link-local never. On
send, the guarded fetcher checks the addresses a name resolves to (a name pointing inside
is refused without connecting), whatever was stored before. The URLs refused on save are in
test_notify_ssrf_refused.py (on one gateway for the module)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from faregate.accounts.notify import Notification, NotifyError, NotifyTarget, WebhookNotifier
from faregate.api import GuardedFetcher
from faregate.testing.harness import AdminClient

GOOD = {"notify_type": "webhook", "quota_warning_threshold": 1000, "webhook_url": "https://hooks.example/q"}


async def test_private_addresses_only_when_allowed(make_gateway: Any) -> None:
    server = await make_gateway(settings={"notify_private_addresses": "allow"})
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.ok("PUT", "/api/user/setting", json={**GOOD, "webhook_url": "http://127.0.0.1:9/hook"})
    for url in ("http://169.254.169.254/latest/meta-data", "http://metadata.google.internal/"):
        resp = await admin.http.put("/api/user/setting", json={**GOOD, "webhook_url": url},
                                    headers={"New-Api-User": str(admin.user_id)})
        assert resp.status_code == 400 and "webhook_url" in resp.json()["message"]
    await admin.close()


class _Listener:
    def __init__(self) -> None:
        self.connections = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


async def test_a_name_resolving_inside_is_refused_when_sending() -> None:
    """A URL stored with a public-looking name whose DNS now points inside (or stored before
    these checks existed): the send fails without connecting."""
    listener = _Listener()
    server = await asyncio.start_server(listener.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def resolver(host: str) -> Sequence[str]:
        return {"hooks.example": ["127.0.0.1"], "rebind.example": ["93.184.216.34", "10.1.2.3"]}[host]

    note = Notification("quota_exceed", "low", "{{value}} left", ("$1",))
    try:
        async with GuardedFetcher(resolver=resolver, timeout=5) as fetcher:
            notifier = WebhookNotifier(fetcher=fetcher)
            for host in ("hooks.example", "rebind.example"):
                target = NotifyTarget(1, "u", "", {"webhook_url": f"http://{host}:{port}/hook", "webhook_secret": "s"})
                with pytest.raises(NotifyError, match="address"):
                    await notifier.send(target, note)
            for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/", ""):
                with pytest.raises(NotifyError, match="webhook_url"):
                    await notifier.send(NotifyTarget(1, "u", "", {"webhook_url": url}), note)
    finally:
        server.close()
        await server.wait_closed()
    assert listener.connections == 0
