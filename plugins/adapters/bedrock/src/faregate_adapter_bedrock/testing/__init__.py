"""The Bedrock plugin's test kit: :class:`FakeBedrock`, a fake Amazon Bedrock runtime (see
:mod:`.fake`), the event-stream writer (:mod:`.eventstream`), SigV4 checking
(:mod:`.sigv4`), the Converse request schema (:mod:`.converse_schema`) and answers
(:mod:`.converse_answers`), and the ``fake_bedrock`` pytest fixture (:mod:`.fixtures`, a
``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_bedrock.testing.converse_answers import REPLY_PREFIX, TOOL_INPUT
from faregate_adapter_bedrock.testing.fake import (
    ACCESS_KEY,
    API_KEY,
    CONVERSE_MODELS,
    EVENT_STREAM,
    FAULT_KINDS,
    REGION,
    SECRET_KEY,
    FakeBedrock,
    Fault,
    error_body,
)

__all__ = ["ACCESS_KEY", "API_KEY", "CONVERSE_MODELS", "EVENT_STREAM", "FAULT_KINDS", "REGION", "REPLY_PREFIX",
           "SECRET_KEY", "TOOL_INPUT", "FakeBedrock", "Fault", "error_body"]
