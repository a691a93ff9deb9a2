"""The Gemini models a Gemini channel is known to serve: what the console offers when
such a channel is made (an operator can always list others)."""

from __future__ import annotations

GEMINI_MODELS = (
    "gemini-3-pro-preview", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.0-flash",
    "gemini-2.0-flash-lite", "gemini-embedding-001", "text-embedding-004",
)
