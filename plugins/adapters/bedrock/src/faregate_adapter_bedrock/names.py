"""Names the rest of the plugin shares: the channel type, Bedrock's hosts and paths, the
Anthropic body version."""

from __future__ import annotations

#: new-api's channel type for AWS (Bedrock)
BEDROCK_CHANNEL_TYPE = 33
#: the ``anthropic_version`` a Claude body on Bedrock carries (in place of the header)
ANTHROPIC_VERSION = "bedrock-2023-05-31"
#: the client format Claude models on Bedrock are passed through in
ANTHROPIC_FORMAT = "anthropic.messages"
#: the SigV4 signing name of both the runtime and the control plane
SIGNING_NAME = "bedrock"
#: where calls go when the channel sets no base URL
RUNTIME_HOST = "https://bedrock-runtime.{region}.amazonaws.com"
#: the control plane (ListFoundationModels), another host than the runtime's
CONTROL_HOST = "https://bedrock.{region}.amazonaws.com"

INVOKE = "invoke"
INVOKE_STREAM = "invoke-with-response-stream"
CONVERSE = "converse"
CONVERSE_STREAM = "converse-stream"
