"""What the fake Bedrock answers to Converse, deterministically, and the rules the real API
enforces beyond its request schema (:class:`BadInput`, answered 400 ValidationException
with the service's words).

The answer is ``REPLY_PREFIX`` + the last user text, cut at a stop sequence or at
``maxTokens``; with tools and "call tool" in the last user text (or a ``toolChoice`` of
``any`` / ``tool``) it is one ``toolUse`` block of ``TOOL_INPUT``. Usage counts four
characters a token; the fake's ``cache_read_tokens`` / ``cache_write_tokens`` come back
as ``cacheReadInputTokens`` / ``cacheWriteInputTokens``, outside ``inputTokens`` as AWS
reports them."""

from __future__ import annotations

import itertools
from typing import Any

import orjson

REPLY_PREFIX = "Hello from fake-bedrock! You said: "
TOOL_INPUT = {"city": "Paris"}
_ids = itertools.count(1)


class BadInput(Exception):
    """A request Bedrock refuses with 400 ValidationException (its message)."""


def tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in message.get("content") or [] if isinstance(b, dict)]


def text_of(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in _blocks(message) if isinstance(b.get("text"), str))


def check_rules(body: dict[str, Any]) -> None:
    """The Converse rules the schema cannot say."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadInput("A conversation must start with a user message. Try again with a conversation that starts "
                       "with a user message.")
    if messages[0].get("role") != "user":
        raise BadInput("A conversation must start with a user message. Try again with a conversation that starts "
                       "with a user message.")
    calls: set[str] = set()
    uses_tools = False
    for i, message in enumerate(messages):
        if i and message.get("role") == messages[i - 1].get("role"):
            raise BadInput("A conversation must alternate between user and assistant roles. Make sure the "
                           "conversation alternates between user and assistant roles and try again.")
        if not message.get("content"):
            raise BadInput(f"The content field in the Message object at messages.{i} is empty. Add a ContentBlock "
                           "object to the content field and try again.")
        results = 0
        for j, block in enumerate(_blocks(message)):
            if "text" in block and not str(block["text"]).strip():
                raise BadInput(f"The text field in the ContentBlock object at messages.{i}.content.{j} is blank. "
                               "Add text to the text field, and try again.")
            if "toolUse" in block or "toolResult" in block:
                uses_tools = True
            if "toolResult" in block:
                results += 1
                if block["toolResult"].get("toolUseId") not in calls:
                    raise BadInput(f"messages.{i}.content.{j}: the toolResult's toolUseId answers no toolUse of the "
                                   "previous turn.")
        if message.get("role") == "assistant":
            calls = {b["toolUse"]["toolUseId"] for b in _blocks(message) if "toolUse" in b}
        elif results and results != len(calls):
            raise BadInput(f"The number of toolResult blocks at messages.{i}.content exceeds the number of toolUse "
                           "blocks of previous turn.")
    if uses_tools and not body.get("toolConfig"):
        raise BadInput("The toolConfig field must be defined when using toolUse and toolResult content blocks.")


def _tool(body: dict[str, Any], last_text: str) -> str | None:
    config = body.get("toolConfig") or {}
    tools = [t["toolSpec"]["name"] for t in config.get("tools") or [] if "toolSpec" in t]
    if not tools:
        return None
    choice = config.get("toolChoice") or {}
    if "tool" in choice:
        return str(choice["tool"]["name"])
    if "any" in choice or "call tool" in last_text.lower():
        return str(tools[0])
    return None


def answer(body: dict[str, Any], cache_read: int = 0, cache_write: int = 0) -> dict[str, Any]:
    """A ``ConverseResponse`` to a valid request."""
    messages = body["messages"]
    last = messages[-1] if messages[-1].get("role") == "user" else {}
    last_text = text_of(last) or next((text_of(m) for m in reversed(messages) if m.get("role") == "user"), "")
    prompt = sum(2 + tokens(text_of(m) or orjson.dumps(m.get("content")).decode()) for m in messages)
    prompt += sum(tokens(str(b.get("text", ""))) for b in body.get("system") or [])
    config = body.get("inferenceConfig") or {}
    tool = _tool(body, last_text) if last.get("content") and not any("toolResult" in b for b in _blocks(last)) \
        else None
    if tool is not None:
        content: list[dict[str, Any]] = [{"toolUse": {"toolUseId": f"tooluse_{next(_ids):022d}", "name": tool,
                                                      "input": TOOL_INPUT}}]
        output, reason = tokens(tool + orjson.dumps(TOOL_INPUT).decode()), "tool_use"
    else:
        text, reason = REPLY_PREFIX + last_text[:200], "end_turn"
        for stop in config.get("stopSequences") or []:
            if stop in text:
                text, reason = text[:text.index(stop)], "stop_sequence"
                break
        limit = config.get("maxTokens")
        if isinstance(limit, int) and tokens(text) > limit:
            text, reason = text[:limit * 4], "max_tokens"
        content, output = [{"text": text}], tokens(text)
    usage: dict[str, Any] = {"inputTokens": prompt, "outputTokens": output,
                             "totalTokens": prompt + output + cache_read + cache_write}
    if cache_read or cache_write:
        usage |= {"cacheReadInputTokens": cache_read, "cacheWriteInputTokens": cache_write}
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": reason, "usage": usage,
            "metrics": {"latencyMs": 42}}


def _pieces(text: str, parts: int = 3) -> list[str]:
    step = max(1, -(-len(text) // parts))
    return [text[i:i + step] for i in range(0, len(text), step)] or [""]


def stream_events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The ConverseStream events of ``response``: ``(event type, payload)``."""
    start: dict[str, Any] = {"role": "assistant"}
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", start)]
    for index, block in enumerate(response["output"]["message"]["content"]):
        if "toolUse" in block:
            use = block["toolUse"]
            events.append(("contentBlockStart", {"start": {"toolUse": {"toolUseId": use["toolUseId"],
                                                                       "name": use["name"]}},
                                                 "contentBlockIndex": index}))
            deltas: list[dict[str, Any]] = [{"toolUse": {"input": p}}
                                            for p in _pieces(orjson.dumps(use["input"]).decode())]
        else:
            deltas = [{"text": p} for p in _pieces(block["text"])]
        events += [("contentBlockDelta", {"delta": d, "contentBlockIndex": index}) for d in deltas]
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": response["stopReason"]}))
    events.append(("metadata", {"usage": response["usage"], "metrics": response["metrics"]}))
    return events
