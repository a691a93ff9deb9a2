"""The models a Bedrock channel is known to serve, by the names a client may use (mapped to
Bedrock ids by :mod:`.model_ids`): what the console offers when such a channel is made (an
operator can always list others, Bedrock ids included)."""

from __future__ import annotations

from faregate_adapter_bedrock.model_ids import CATALOG

BEDROCK_MODELS = CATALOG
