"""Dify chat app answers in the canonical model. A blocking answer is one ``message``
event (``answer``, ``conversation_id``, ``metadata.usage``); usage is Dify's
``metadata.usage`` (``prompt_tokens``, ``completion_tokens``), which is what new-api bills.

Dify's reasoning models (its "Thinking..." block) wrap their reasoning in an HTML
``<details … > <summary> Thinking... </summary>`` … ``</details>`` element inside the
answer; new-api turns it into ``<think>`` tags. Here it becomes canonical reasoning, so
an OpenAI client sees ``reasoning_content`` and an Anthropic client a thinking block."""

from __future__ import annotations

import re
from typing import Any

from faregate.api import ChatResponse, ContentPart, Message, ReasoningPart, TextPart, Usage

MAX_COUNT = 2**31 - 1
#: the opening of Dify's thinking block (new-api matches the same element)
THINKING_OPEN = re.compile(r"<details[^>]*>\s*<summary>\s*Thinking\.\.\.\s*</summary>\s*")
THINKING_CLOSE = "</details>"


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        return 0
    return value


def parse_usage(metadata: Any) -> Usage | None:
    usage = metadata.get("usage") if isinstance(metadata, dict) else None
    if not isinstance(usage, dict):
        return None
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    if not prompt and not completion:
        return None
    return Usage(input_tokens=prompt, output_tokens=completion)


def split_thinking(answer: str) -> list[ContentPart]:
    """An answer's reasoning block (if it opens with one) and its text."""
    opening = THINKING_OPEN.match(answer)
    if opening is None:
        return [TextPart(answer)] if answer else []
    rest = answer[opening.end():]
    thought, _, text = rest.partition(THINKING_CLOSE)
    parts: list[ContentPart] = [ReasoningPart(text=thought.strip())]
    text = text.lstrip()
    if text:
        parts.append(TextPart(text))
    return parts


def parse_response(obj: Any) -> ChatResponse:
    """A blocking ``ChatCompletionResponse``; ``ValueError`` when it is not one."""
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
        raise ValueError("not a Dify chat answer")
    conversation = obj.get("conversation_id")
    # new-api answers with the conversation's id: a client continues the conversation with it
    ident = conversation if isinstance(conversation, str) and conversation else str(obj.get("message_id") or "")
    return ChatResponse(id=ident, model="", message=Message("assistant", split_thinking(obj["answer"])),
                        stop_reason="stop", usage=parse_usage(obj.get("metadata")))
