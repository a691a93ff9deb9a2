"""``faregate dev …``: helpers for trying the gateway out, such as a provider's fake
upstream so the quick tour needs no provider key."""

from __future__ import annotations

import contextlib
import json
import signal

import click

from faregate.cli.runtime import load_gateway, run_async


@click.group()
def dev() -> None:
    """Tools for trying Faregate out and developing plugins."""


@dev.command("fake-provider")
@click.argument("name", required=False)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=8100, show_default=True,
              help="0 picks a free port.")
@click.option("--api-key", default="sk-fake-upstream", show_default=True,
              help="The key the fake requires (what the channel is given).")
def fake_provider(name: str | None, host: str, port: int, api_key: str) -> None:
    """Serve the fake upstream of provider NAME (openai, anthropic, …: the installed
    adapters that bring one) until interrupted. Its answers are deterministic."""
    providers = {p.name: p for p in load_gateway().provider_list if p.fake_server is not None}
    if name is None or name not in providers:
        known = ", ".join(sorted(providers)) or "none: install an adapter plugin"
        raise click.UsageError(f"choose a provider with a fake upstream: {known}")
    provider = providers[name]
    assert provider.fake_server is not None
    fake = provider.fake_server(host, port, api_key)
    channel_type = provider.channel_types[0]

    async def run() -> None:
        import asyncio  # here: every command would pay for it at start

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        async with fake as server:
            click.echo(f"fake {name} upstream listening on {server.base_url} (key {api_key})")
            click.echo("add it as a channel:")
            channel = {"type": channel_type, "name": f"fake-{name}", "base_url": server.base_url, "key": api_key,
                       "models": _models(server), "group": "default",
                       # what else the fake's channel needs (a region in ``other``, say)
                       **getattr(server, "channel_fields", {})}
            click.echo("  " + json.dumps(channel))
            await stop.wait()

    with contextlib.suppress(KeyboardInterrupt):
        run_async(run())


def _models(server: object) -> str:
    models = getattr(server, "models", None) or ()
    return ",".join(str(model) for model in list(models)[:3])
