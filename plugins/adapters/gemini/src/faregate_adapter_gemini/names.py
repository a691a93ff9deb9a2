"""Names the rest of the plugin shares: the format, the channel type, the endpoint kinds,
the actions of ``/v1beta/models/{model}:{action}`` and the API versions."""

from __future__ import annotations

import re

#: the inbound format's name (``Provider.native_format`` of the Gemini channel type)
FORMAT_NAME = "gemini.generate_content"
#: new-api's channel type for Google AI Studio (the Gemini API)
GEMINI_CHANNEL_TYPE = 24
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

#: ``generateContent`` / ``streamGenerateContent``: a conversation turn, any chat channel
GENERATE_KIND = "gemini_generate"
#: ``embedContent`` / ``batchEmbedContents``: Gemini channels only (their own wire format)
EMBED_KIND = "gemini_embeddings"

#: any other action under the native prefixes: answered 501 in Gemini's shape
UNSERVED_KIND = "gemini_unserved"

GENERATE = "generateContent"
STREAM_GENERATE = "streamGenerateContent"
EMBED = "embedContent"
BATCH_EMBED = "batchEmbedContents"
COUNT_TOKENS = "countTokens"

#: the versions the gateway serves the native routes under (the Python SDK defaults to
#: ``v1``, the Node one to ``v1beta``)
CLIENT_VERSIONS = ("v1beta", "v1")
#: the version upstream calls use unless a channel's ``other`` names one (new-api's default)
UPSTREAM_VERSION = "v1beta"
_VERSION = re.compile(r"v\d+(?:alpha|beta)?\d*")


def upstream_version(other: str) -> str:
    """The API version of a channel: its ``other`` field when that is one (``v1``,
    ``v1beta``, ``v1alpha``), else :data:`UPSTREAM_VERSION`."""
    other = other.strip()
    return other if _VERSION.fullmatch(other) else UPSTREAM_VERSION
