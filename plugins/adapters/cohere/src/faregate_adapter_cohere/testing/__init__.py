"""The Cohere plugin's test kit: :class:`FakeCohere`, a fake Cohere API (see :mod:`.fake`),
its schema checks (:mod:`.schema`, Cohere's published OpenAPI document) and the
``fake_cohere`` pytest fixture (:mod:`.fixtures`, a ``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_cohere.testing.fake import (
    CHAT_MODEL,
    DEFAULT_MODELS,
    REPLY_PREFIX,
    RERANK_MODEL,
    TEMPLATE_TOKENS,
    THINKING_PREFIX,
    TOOL_ARGUMENTS,
    TOOL_REPLY_PREFIX,
    FakeCohere,
    words,
)

__all__ = ["CHAT_MODEL", "DEFAULT_MODELS", "REPLY_PREFIX", "RERANK_MODEL", "TEMPLATE_TOKENS", "THINKING_PREFIX",
           "TOOL_ARGUMENTS", "TOOL_REPLY_PREFIX", "FakeCohere", "words"]
