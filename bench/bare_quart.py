"""The ceiling for the gateway: a bare Quart app that answers every POST to
/v1/chat/completions with a small JSON body and does nothing else, on Hypercorn with
uvloop in one process, as ``faregate serve --workers 1`` serves the gateway.

    python bench/bare_quart.py --port 9100
"""

from __future__ import annotations

import argparse

from quart import Quart, Response, request

app = Quart("bare")

# roughly the size of the fake upstream's non-streamed chat completion
_BODY = (b'{"id":"chatcmpl-bare","object":"chat.completion","created":0,"model":"gpt-4o-mini",'
         b'"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from bare Quart!"},'
         b'"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":5,"total_tokens":9}}')


@app.post("/v1/chat/completions")
async def chat() -> Response:
    # read the body like the gateway must, so the comparison includes it
    await request.get_data()
    return Response(_BODY, content_type="application/json")


def main(argv: list[str] | None = None) -> None:
    import uvloop
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    args = parser.parse_args(argv)
    config = Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.keep_alive_timeout = 75
    config.accesslog = None
    config.errorlog = "-"
    print(f"listening on http://{args.host}:{args.port}", flush=True)
    uvloop.run(serve(app, config))  # Hypercorn stops on SIGTERM/SIGINT by itself


if __name__ == "__main__":
    main()
