"""The models a Cohere channel is known to serve (new-api's Cohere model list, with Cohere's
current chat and rerank models): what the console offers when such a channel is made."""

from __future__ import annotations

COHERE_MODELS = (
    "command-a-03-2025", "command-a-reasoning-08-2025", "command-a-vision-07-2025", "command-r7b-12-2024",
    "command-r-plus-08-2024", "command-r-08-2024", "command-r-plus", "command-r", "command", "command-light",
    "rerank-v3.5", "rerank-english-v3.0", "rerank-multilingual-v3.0",
)
