"""What the fake Gemini server answers, deterministically: ``generateContent`` replies
(text, thoughts, function calls, stop sequences, output limits, safety blocks, several
candidates), their stream chunks, embeddings, token counts and model pages; and the
request rules the real API enforces beyond its schema (:class:`BadInput`)."""

from __future__ import annotations

import base64
import hashlib
import math
from typing import Any

from faregate_adapter_gemini.fields import get

REPLY_PREFIX = "Hello from fake-gemini! You said: "
THOUGHT_PREFIX = "Let me think about: "
TOOL_ARGS = {"city": "Paris"}
#: text in the last user turn that makes the fake block the prompt / stop for safety
UNSAFE_PROMPT = "unsafe-prompt"
UNSAFE_OUTPUT = "unsafe-output"
EMBEDDING_DIMENSIONS = 8
_SAFETY = [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]


class BadInput(Exception):
    """A request the real API refuses with 400 INVALID_ARGUMENT (its message)."""


def tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def signature_for(text: str) -> str:
    """The fake's thought signature for ``text`` (Google's is opaque base64 bytes)."""
    return base64.b64encode(hashlib.sha256(text.encode()).digest()[:24]).decode()


def text_of(content: Any) -> str:
    parts = get(content, "parts") if isinstance(content, dict) else None
    return "".join(str(get(p, "text") or "") for p in parts or [] if isinstance(p, dict)
                   and get(p, "thought") is not True)


def is_gemini3(model: str) -> bool:
    return model.startswith("gemini-3")


def check_turns(contents: list[Any], model: str) -> None:
    """Function responses answer the calls of the turn before, one for one; on Gemini 3
    the first call of each model step of the current turn carries its thought signature."""
    for i, content in enumerate(contents):
        calls = [p for p in get(content, "parts") or [] if get(p, "functionCall") is not None]
        if get(content, "role") != "model" or not calls:
            continue
        following = contents[i + 1] if i + 1 < len(contents) else None
        if following is not None:
            answers = [p for p in get(following, "parts") or [] if get(p, "functionResponse") is not None]
            if len(answers) != len(calls):
                raise BadInput("Please ensure that the number of function response parts is equal to the number "
                               "of function call parts of the function call turn.")
    if not is_gemini3(model):
        return
    current = max((i for i, c in enumerate(contents) if get(c, "role") != "model" and text_of(c)), default=0)
    for content in contents[current:]:
        calls = [p for p in get(content, "parts") or [] if get(p, "functionCall") is not None]
        if get(content, "role") == "model" and calls and not get(calls[0], "thoughtSignature"):
            raise BadInput("Function call is missing a thought_signature in functionCall parts. This is required "
                           "for tools to work correctly.")


def _thinking(config: dict[str, Any], model: str) -> tuple[bool, bool]:
    """``(thinking on, thoughts shown)``; refuses what the model refuses."""
    thinking = get(config, "thinkingConfig") or {}
    budget, level = get(thinking, "thinkingBudget"), get(thinking, "thinkingLevel")
    if budget is not None and level is not None:
        raise BadInput("You can only set only one of thinking budget and thinking level.")
    if level is not None and not is_gemini3(model):
        raise BadInput("Thinking level is not supported for this model.")
    if budget == 0 and "pro" in model:
        raise BadInput("Budget 0 is invalid. This model only works in thinking mode.")
    on = bool(thinking) and budget != 0
    return on, on and get(thinking, "includeThoughts") is True


def _tool_call(body: dict[str, Any], contents: list[Any]) -> str | None:
    """The function to call: the first declared (or allowed) one, when the mode is ANY, or
    AUTO and the last turn is the user's text asking to "call tool" (not a function's answer)."""
    declarations = [d for tool in get(body, "tools") or [] for d in get(tool, "functionDeclarations") or []]
    if not declarations:
        return None
    calling = get(get(body, "toolConfig") or {}, "functionCallingConfig") or {}
    mode = get(calling, "mode") or "AUTO"
    allowed = get(calling, "allowedFunctionNames") or []
    asked = bool(contents) and "call tool" in text_of(contents[-1]).lower()
    if mode == "NONE" or (mode != "ANY" and not asked):
        return None
    return str(allowed[0] if allowed else get(declarations[0], "name"))


def _reply_text(body: dict[str, Any], config: dict[str, Any], last: str, room: int) -> tuple[str, str]:
    text = REPLY_PREFIX + last[:200]
    if get(config, "responseMimeType") == "application/json":
        text = '{"reply": "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"}'
    reason = "STOP"
    for stop in get(config, "stopSequences") or []:
        if stop and stop in text:
            text = text[:text.index(stop)]
            break
    if UNSAFE_OUTPUT in last:
        return REPLY_PREFIX, "SAFETY"
    if tokens(text) > room:
        text, reason = text[:max(1, room) * 4], "MAX_TOKENS"
    return text, reason


def generate(body: dict[str, Any], model: str, response_id: str, cached: int = 0) -> dict[str, Any]:
    """The whole ``GenerateContentResponse`` for a valid ``body`` (raises :class:`BadInput`)."""
    contents = get(body, "contents") or []
    check_turns(contents, model)
    config = get(body, "generationConfig") or {}
    thinking, shown = _thinking(config, model)
    last = next((text_of(c) for c in reversed(contents) if get(c, "role") != "model" and text_of(c)), "")
    prompt = sum(3 + tokens(text_of(c)) for c in contents) + tokens(text_of(get(body, "systemInstruction")))
    prompt += cached
    usage: dict[str, Any] = {"promptTokenCount": prompt}
    if cached:
        usage["cachedContentTokenCount"] = cached
    details = [{"modality": "TEXT", "tokenCount": prompt}]
    if UNSAFE_PROMPT in last:
        return {"promptFeedback": {"blockReason": "SAFETY", "safetyRatings": _SAFETY},
                "usageMetadata": {**usage, "totalTokenCount": prompt, "promptTokensDetails": details},
                "modelVersion": model, "responseId": response_id}
    thought = THOUGHT_PREFIX + last[:100] if thinking else ""
    candidates, output = [], 0
    for index in range(int(float(get(config, "candidateCount") or 1))):
        parts: list[dict[str, Any]] = []
        if shown:
            parts.append({"text": thought, "thought": True})
        name = _tool_call(body, contents)
        if name is not None:
            parts.append({"functionCall": {"name": name, "args": TOOL_ARGS}})
            reason, output = "STOP", output + tokens(name) + 3
        else:
            limit = get(config, "maxOutputTokens")
            text, reason = _reply_text(body, config, last, (limit or 65536) - tokens(thought))
            parts.append({"text": text})
            output += tokens(text)
        if thinking:
            signed = next(p for p in parts if "thought" not in p)
            signed["thoughtSignature"] = signature_for(thought)
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "finishReason": reason,
                                     "index": index}
        if reason == "SAFETY":
            candidate["safetyRatings"] = _SAFETY
        candidates.append(candidate)
    usage["candidatesTokenCount"] = output
    if thinking:
        usage["thoughtsTokenCount"] = tokens(thought) * len(candidates)
    usage["totalTokenCount"] = prompt + output + usage.get("thoughtsTokenCount", 0)
    usage["promptTokensDetails"] = details
    return {"candidates": candidates, "usageMetadata": usage, "modelVersion": model, "responseId": response_id}


def _pieces(text: str, count: int = 3) -> list[str]:
    step = max(1, math.ceil(len(text) / count))
    return [text[i:i + step] for i in range(0, len(text), step)] or [""]


def chunks(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """``answer`` as stream chunks: text in pieces, function calls whole, the finish reason
    and the full usage on each candidate's last chunk (earlier chunks count the prompt)."""
    usage = answer["usageMetadata"]
    if "candidates" not in answer:
        return [answer]
    early = {"promptTokenCount": usage["promptTokenCount"], "totalTokenCount": usage["promptTokenCount"]}
    out: list[dict[str, Any]] = []
    for candidate in answer["candidates"]:
        pieces: list[dict[str, Any]] = []
        for part in candidate["content"]["parts"]:
            if "text" not in part:
                pieces.append(part)
                continue
            texts = _pieces(part["text"])
            plain = {k: v for k, v in part.items() if k != "thoughtSignature"}
            pieces += [{**plain, "text": t} for t in texts[:-1]]
            pieces.append({**part, "text": texts[-1]})  # a signature comes with the part's last piece
        for i, piece in enumerate(pieces):
            chunk_candidate: dict[str, Any] = {"content": {"role": "model", "parts": [piece]},
                                               "index": candidate["index"]}
            final = i == len(pieces) - 1
            if final:
                chunk_candidate["finishReason"] = candidate["finishReason"]
                if "safetyRatings" in candidate:
                    chunk_candidate["safetyRatings"] = candidate["safetyRatings"]
            out.append({"candidates": [chunk_candidate], "usageMetadata": usage if final else early,
                        "modelVersion": answer["modelVersion"], "responseId": answer["responseId"]})
    return out


def embedding(content: Any, dimensions: int | None) -> dict[str, Any]:
    """Deterministic unit-free values from the content's text."""
    digest = hashlib.sha256(text_of(content).encode()).digest()
    size = dimensions or EMBEDDING_DIMENSIONS
    return {"values": [round((digest[i % len(digest)] - 128) / 128, 6) for i in range(size)]}


def dimensions(request: dict[str, Any]) -> int | None:
    found = get(request, "outputDimensionality") or get(get(request, "embedContentConfig") or {},
                                                         "outputDimensionality")
    return int(found) if found is not None else None


def count(body: dict[str, Any]) -> int:
    inner = get(body, "generateContentRequest")
    contents = get(inner, "contents") if isinstance(inner, dict) else get(body, "contents")
    return sum(3 + tokens(text_of(c)) for c in contents or [])


def model_entry(model: str) -> dict[str, Any]:
    embedding_model = "embedding" in model
    methods = ["embedContent", "batchEmbedContents"] if embedding_model else [
        "generateContent", "countTokens", "createCachedContent", "batchGenerateContent"]
    return {"name": f"models/{model}", "version": "001", "displayName": model.replace("-", " ").title(),
            "description": f"The fake's {model}", "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 0 if embedding_model else 65_536, "supportedGenerationMethods": methods}
