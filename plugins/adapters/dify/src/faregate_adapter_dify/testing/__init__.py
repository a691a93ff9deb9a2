"""The Dify plugin's test kit: :class:`FakeDify`, a fake Dify chat app (see :mod:`.fake`),
its request shape (:mod:`.schema`) and the ``fake_dify`` pytest fixture (:mod:`.fixtures`,
a ``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_dify.testing.fake import (
    APP_MODEL,
    REPLY_PREFIX,
    THINKING_BLOCK,
    THINKING_TEXT,
    FakeDify,
    Fault,
    words,
)

__all__ = ["APP_MODEL", "REPLY_PREFIX", "THINKING_BLOCK", "THINKING_TEXT", "FakeDify", "Fault", "words"]
