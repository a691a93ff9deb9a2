"""The second ceiling: the least a relay on the gateway's stack does per request. Quart on
Hypercorn with uvloop in one process, aiohttp to the upstream, orjson; it checks the key,
calls three pluggy hooks, forwards the body (streamed answers chunk by chunk) and queues a
log line that a background task drains. No accounts, pricing or retries.

    python bench/minimal_relay.py --port 9101 --upstream http://127.0.0.1:9000 --key sk-bench
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pluggy
from quart import Quart, Response, request

hookspec, hookimpl = pluggy.HookspecMarker("minimal"), pluggy.HookimplMarker("minimal")


class Spec:
    @hookspec
    def on_request(self, model: str, key: str) -> None: ...
    @hookspec
    def on_upstream(self, model: str, headers: dict[str, str]) -> None: ...
    @hookspec
    def on_done(self, model: str, status: int) -> None: ...


class Plugin:  # one no-op implementation of each hook, as a gateway's plugins would register
    @hookimpl
    def on_request(self, model: str, key: str) -> None: ...
    @hookimpl
    def on_upstream(self, model: str, headers: dict[str, str]) -> None: ...
    @hookimpl
    def on_done(self, model: str, status: int) -> None: ...


app, pm = Quart("minimal"), pluggy.PluginManager("minimal")
pm.add_hookspecs(Spec)
pm.register(Plugin())
conf: dict[str, Any] = {}
log_queue: asyncio.Queue[bytes] = asyncio.Queue()


@app.before_serving
async def start() -> None:
    conf["session"] = aiohttp.ClientSession(conf["upstream"])
    conf["drain"] = asyncio.get_running_loop().create_task(drain())


async def drain() -> None:  # the log writer: takes lines off the queue (a real one would batch them to a database)
    while True:
        await log_queue.get()


@app.post("/v1/chat/completions")
async def chat() -> Response | tuple[bytes, int]:
    key = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if key not in conf["keys"]:
        return b'{"error":{"message":"invalid key"}}', 401
    raw = await request.get_data()
    body = orjson.loads(raw)
    model = body.get("model", "")
    pm.hook.on_request(model=model, key=key)
    headers = {"Authorization": "Bearer upstream-key", "Content-Type": "application/json"}
    pm.hook.on_upstream(model=model, headers=headers)
    upstream = await conf["session"].post("/v1/chat/completions", data=raw, headers=headers)

    def done() -> None:
        pm.hook.on_done(model=model, status=upstream.status)
        log_queue.put_nowait(orjson.dumps({"model": model, "key": key[-4:], "status": upstream.status}))

    if not body.get("stream"):
        data = await upstream.read()
        done()
        return Response(data, status=upstream.status, content_type="application/json")

    async def chunks() -> AsyncIterator[bytes]:
        async for chunk in upstream.content.iter_any():
            yield chunk
        done()

    return Response(chunks(), status=upstream.status, content_type="text/event-stream")


def main(argv: list[str] | None = None) -> None:
    import uvloop
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9101)
    parser.add_argument("--upstream", required=True, help="base URL of the (fake) OpenAI upstream")
    parser.add_argument("--key", action="append", default=[], help="an API key to accept (repeatable)")
    args = parser.parse_args(argv)
    conf.update(upstream=args.upstream, keys=frozenset(args.key))
    config = Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.keep_alive_timeout = 75
    config.accesslog = None
    config.errorlog = "-"
    print(f"listening on http://{args.host}:{args.port}", flush=True)
    uvloop.run(serve(app, config))  # Hypercorn stops on SIGTERM/SIGINT by itself


if __name__ == "__main__":
    main()
