"""The request of Bedrock's Converse and ConverseStream APIs as JSON Schema, written from
AWS's API reference (``API_runtime_Converse``, ``Message``, ``ContentBlock``,
``SystemContentBlock``, ``InferenceConfiguration``, ``ToolConfiguration``, ``Tool``,
``ToolSpecification``, ``ToolChoice``, ``ToolResultBlock``, ``ImageBlock``,
``ReasoningContentBlock``, ``CachePointBlock``): AWS publishes no JSON Schema of its own.
Unions (a content block, a tool choice …) hold exactly one member; unknown fields are
refused (the service answers ``ValidationException``); blobs travel as base64 text.

The rules the reference states in prose, beyond any schema, are the fake's
(:mod:`.converse_answers`): the first message is the user's and the roles alternate, no
blank text, a ``toolConfig`` whenever tool blocks are used, tool results answer the
previous turn's calls.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

NAME = {"type": "string", "pattern": "^[a-zA-Z0-9_-]+$", "minLength": 1, "maxLength": 64}
BASE64 = {"type": "string", "pattern": r"^[A-Za-z0-9+/]*={0,2}$"}
CACHE_POINT = {"type": "object", "properties": {"type": {"const": "default"}}, "required": ["type"],
               "additionalProperties": False}


def _union(**members: Any) -> dict[str, Any]:
    """An AWS union: an object with exactly one of ``members``."""
    return {"type": "object", "properties": members, "additionalProperties": False, "minProperties": 1,
            "maxProperties": 1}


def _object(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


S3_LOCATION = _object(("uri",), uri={"type": "string", "minLength": 1, "maxLength": 1024},
                      bucketOwner={"type": "string"})
IMAGE = _object(("format", "source"), format={"enum": ["png", "jpeg", "gif", "webp"]},
                source=_union(bytes=BASE64, s3Location=S3_LOCATION))
DOCUMENT = _object(("name", "source"), format={"enum": ["pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt",
                                                         "md"]},
                   name={"type": "string", "minLength": 1, "maxLength": 200},
                   source=_union(bytes=BASE64, s3Location=S3_LOCATION, text={"type": "string"},
                                 content={"type": "array"}),
                   context={"type": "string"}, citations={"type": "object"})
VIDEO = _object(("format", "source"), format={"enum": ["mkv", "mov", "mp4", "webm", "flv", "mpeg", "mpg", "wmv",
                                                       "three_gp"]},
                source=_union(bytes=BASE64, s3Location=S3_LOCATION))
TOOL_RESULT_CONTENT = _union(text={"type": "string"}, json={}, image=IMAGE, document=DOCUMENT, video=VIDEO)
REASONING = _union(reasoningText=_object(("text",), text={"type": "string"}, signature={"type": "string"}),
                   redactedContent=BASE64)
GUARD = {"type": "object"}
CONTENT_BLOCK = _union(
    text={"type": "string"},
    image=IMAGE,
    document=DOCUMENT,
    video=VIDEO,
    toolUse=_object(("toolUseId", "name", "input"), toolUseId=NAME, name=NAME, input={}),
    toolResult=_object(("toolUseId", "content"), toolUseId=NAME,
                       content={"type": "array", "items": TOOL_RESULT_CONTENT},
                       status={"enum": ["success", "error"]}),
    guardContent=GUARD,
    cachePoint=CACHE_POINT,
    reasoningContent=REASONING,
    citationsContent={"type": "object"},
)
MESSAGE = _object(("role", "content"), role={"enum": ["user", "assistant"]},
                  content={"type": "array", "items": CONTENT_BLOCK})
SYSTEM_BLOCK = _union(text={"type": "string", "minLength": 1}, guardContent=GUARD, cachePoint=CACHE_POINT)
TOOL_SPEC = _object(("name", "inputSchema"), name=NAME, description={"type": "string", "minLength": 1},
                    inputSchema=_union(json={"type": "object"}), strict={"type": "boolean"})
TOOL = _union(toolSpec=TOOL_SPEC, cachePoint=CACHE_POINT)
TOOL_CONFIG = _object(("tools",), tools={"type": "array", "minItems": 1, "items": TOOL},
                      toolChoice=_union(auto=_object(), any=_object(), tool=_object(("name",), name=NAME)))
INFERENCE_CONFIG = _object(maxTokens={"type": "integer", "minimum": 1},
                           temperature={"type": "number", "minimum": 0, "maximum": 1},
                           topP={"type": "number", "minimum": 0, "maximum": 1},
                           stopSequences={"type": "array", "maxItems": 2500,
                                          "items": {"type": "string", "minLength": 1}})
# ``messages`` may be left out when the model id names a prompt resource: the fake wants them
CONVERSE_REQUEST = _object(
    (),
    messages={"type": "array", "items": MESSAGE},
    system={"type": "array", "items": SYSTEM_BLOCK},
    inferenceConfig=INFERENCE_CONFIG,
    toolConfig=TOOL_CONFIG,
    guardrailConfig=_object(("guardrailIdentifier", "guardrailVersion"), guardrailIdentifier={"type": "string"},
                            guardrailVersion={"type": "string"}, trace={"enum": ["enabled", "disabled",
                                                                                  "enabled_full"]},
                            streamProcessingMode={"enum": ["sync", "async"]}),
    additionalModelRequestFields={"type": "object"},
    additionalModelResponseFieldPaths={"type": "array", "maxItems": 10, "items": {"type": "string"}},
    promptVariables={"type": "object"},
    requestMetadata={"type": "object", "additionalProperties": {"type": "string"}},
    performanceConfig=_object(latency={"enum": ["standard", "optimized"]}),
    serviceTier=_object(type={"enum": ["priority", "default", "flex"]}),
)

_VALIDATOR = Draft202012Validator(CONVERSE_REQUEST)


def request_problem(body: Any) -> str | None:
    """Why ``body`` is not a valid Converse request (None when it is): ``<json path>: <reason>``."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(body))
    return None if error is None else f"{error.json_path}: {error.message}"
