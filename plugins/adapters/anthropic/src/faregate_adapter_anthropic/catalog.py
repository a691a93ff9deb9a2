"""The Claude models an Anthropic channel is known to serve: what the console offers when
such a channel is made (an operator can always list others)."""

from __future__ import annotations

ANTHROPIC_MODELS = (
    "claude-opus-4-1", "claude-opus-4-0", "claude-sonnet-4-5", "claude-sonnet-4-0", "claude-3-7-sonnet-latest",
    "claude-haiku-4-5", "claude-3-5-haiku-latest",
)
