"""The Anthropic plugin's test kit: :class:`FakeAnthropic`, a fake Anthropic Messages
server (see :mod:`.fake`), and the ``fake_anthropic`` pytest fixture (:mod:`.fixtures`,
a ``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_anthropic.testing.fake import (
    DEFAULT_MODELS,
    FAULT_KINDS,
    REPLY_PREFIX,
    THINKING_PREFIX,
    TOOL_INPUT,
    FakeAnthropic,
    Fault,
    error_body,
    signature_for,
)

__all__ = ["DEFAULT_MODELS", "FAULT_KINDS", "REPLY_PREFIX", "THINKING_PREFIX", "TOOL_INPUT", "FakeAnthropic",
           "Fault", "error_body", "signature_for"]
