"""The ceiling for the gateway: a bare Quart app on Hypercorn (uvloop, one worker),
served the same way ``faregate serve`` serves the gateway, answering every POST to
/v1/chat/completions with a small JSON body and doing nothing else.

    python bench/bare_quart.py --port 9100
"""

from __future__ import annotations

import argparse
import sys

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
    from hypercorn.config import Config
    from hypercorn.run import run

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    config = Config()
    # the worker is a spawned process that imports this module by name; that works
    # because running this file puts bench/ first on sys.path, which spawn passes on
    config.application_path = "bare_quart:app"
    config.bind = [f"{args.host}:{args.port}"]
    config.workers = args.workers
    config.worker_class = "uvloop"
    config.keep_alive_timeout = 75
    config.accesslog = None
    config.errorlog = "-"
    print(f"listening on http://{args.host}:{args.port}", flush=True)
    sys.exit(run(config))


if __name__ == "__main__":
    main()
