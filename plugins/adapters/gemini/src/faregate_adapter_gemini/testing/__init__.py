"""The Gemini plugin's test kit: :class:`FakeGemini`, a fake Gemini API server (see
:mod:`.fake`; its answers in :mod:`.answers`), validators built from Gemini's Discovery
document (:mod:`.schema`, :mod:`.discovery`), and the ``fake_gemini`` pytest fixture
(:mod:`.fixtures`, a ``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_gemini.testing.answers import (
    REPLY_PREFIX,
    THOUGHT_PREFIX,
    TOOL_ARGS,
    UNSAFE_OUTPUT,
    UNSAFE_PROMPT,
    signature_for,
)
from faregate_adapter_gemini.testing.fake import (
    DEFAULT_MODELS,
    EMBEDDING,
    FAULT_KINDS,
    FLASH,
    GEMINI_3,
    PRO,
    FakeGemini,
    Fault,
    error_body,
)

__all__ = ["DEFAULT_MODELS", "EMBEDDING", "FAULT_KINDS", "FLASH", "GEMINI_3", "PRO", "REPLY_PREFIX", "THOUGHT_PREFIX",
           "TOOL_ARGS", "UNSAFE_OUTPUT", "UNSAFE_PROMPT", "FakeGemini", "Fault", "error_body", "signature_for"]
