"""Names the rest of the plugin shares: the channel type, Vertex AI's hosts, publishers and
actions, the Anthropic body version, the OAuth scope."""

from __future__ import annotations

#: new-api's channel type for Vertex AI
VERTEX_CHANNEL_TYPE = 41
#: the ``anthropic_version`` a Claude body on Vertex carries (in place of the header)
ANTHROPIC_VERSION = "vertex-2023-10-16"
ANTHROPIC_FORMAT = "anthropic.messages"
GEMINI_FORMAT = "gemini.generate_content"
#: the global endpoint, and a region's (``{region}-aiplatform.googleapis.com``)
GLOBAL_HOST = "https://aiplatform.googleapis.com"
REGIONAL_HOST = "https://{region}-aiplatform.googleapis.com"
GLOBAL = "global"
#: what a service account's token is asked for
SCOPE = "https://www.googleapis.com/auth/cloud-platform"

GOOGLE, ANTHROPIC = "google", "anthropic"
GENERATE, STREAM_GENERATE = "generateContent", "streamGenerateContent"
RAW_PREDICT, STREAM_RAW_PREDICT = "rawPredict", "streamRawPredict"
