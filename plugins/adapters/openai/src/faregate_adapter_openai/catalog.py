"""The models the OpenAI-compatible channel types are known to serve, per new-api channel
type: what the console offers when a channel of that type is made (an operator can always
list others). Kept short and current; a type without an entry offers none."""

from __future__ import annotations

from types import MappingProxyType

OPENAI_MODELS = (
    "gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o1", "o3", "o3-mini", "o4-mini",
    "gpt-4o-audio-preview", "gpt-4o-realtime-preview", "text-embedding-3-small", "text-embedding-3-large",
    "text-embedding-ada-002", "dall-e-3", "gpt-image-1", "whisper-1", "tts-1", "tts-1-hd",
    "omni-moderation-latest",
)

MODEL_CATALOG = MappingProxyType({
    1: OPENAI_MODELS,
    25: ("kimi-k2-0711-preview", "moonshot-v1-8k", "moonshot-v1-32k", "moonshot-v1-128k"),  # Moonshot
    43: ("deepseek-chat", "deepseek-reasoner"),  # DeepSeek
    48: ("grok-4", "grok-3", "grok-3-mini"),  # xAI
})
