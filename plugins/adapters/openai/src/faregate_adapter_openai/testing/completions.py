"""What the fake OpenAI server answers to ``POST /v1/completions`` (legacy text completions):
a deterministic ``text_completion`` object, or its stream of chunks.

Each prompt (a string; a token array reads as ``<N tokens>``) gets ``n`` choices, numbered
prompt by prompt. Choice ``j``'s new text is :data:`COMPLETION_PREFIX` + the prompt's last
80 characters (+ `` #j`` for ``j > 0``), and with a ``suffix`` `` … <the suffix's first 40
characters>`` (the filled middle leads to it). It is cut before the first ``stop`` string
(finish ``stop``) and at ``max_tokens`` (4 characters a token, finish ``length``; 16 when
absent, OpenAI's default). ``echo`` puts the prompt before it; ``logprobs`` adds
4-character tokens at -0.25 each. Usage: prompt tokens ``len(text) // 4 + 1`` (or the
token count) per prompt, completion tokens ``ceil(len(new text) / 4)`` per choice.

DeepSeek's FIM beta (``POST /beta/completions``, the fake's :data:`~.server.DEEPSEEK`
vendor) takes fewer fields: :func:`deepseek_problem` refuses the others, a prompt that is
not one string, and ``max_tokens`` over its 4K.
"""

from __future__ import annotations

import math
import time
from typing import Any

import orjson

from faregate_adapter_openai.testing.errors import error_body

__all__ = ["COMPLETION_PREFIX", "DEEPSEEK_FIELDS", "DEFAULT_MAX_TOKENS", "completion_body", "completion_frames",
           "completion_problem", "deepseek_problem", "prompts_of", "read_completion"]

COMPLETION_PREFIX = " ... and so the fake went on: "
DEFAULT_MAX_TOKENS = 16
LOGPROB = -0.25
#: the fields of DeepSeek's FIM completion request (its API reference), and its output bound
DEEPSEEK_FIELDS = frozenset({"model", "prompt", "suffix", "echo", "frequency_penalty", "presence_penalty", "logprobs",
                             "max_tokens", "stop", "stream", "stream_options", "temperature", "top_p"})
DEEPSEEK_MAX_TOKENS = 4096


def prompts_of(prompt: Any) -> list[str]:
    """The prompts as text: one per string or token array."""
    if isinstance(prompt, str):
        return [prompt]
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return [f"<{len(prompt)} tokens>"]
    return [p if isinstance(p, str) else f"<{len(p)} tokens>" for p in prompt or [""]]


def _prompt_tokens(prompt: Any) -> int:
    if isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
        return len(prompt)
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], list):
        return sum(len(p) for p in prompt)
    return sum(len(p) // 4 + 1 for p in prompts_of(prompt))


def completion_problem(body: dict[str, Any]) -> bytes | None:
    """OpenAI's 400 body for what its schema does not say but its API refuses; None if fine."""
    n, best_of = body.get("n") or 1, body.get("best_of")
    if isinstance(best_of, int) and best_of and best_of < n:
        return error_body(400, "best_of must be greater than or equal to n", type="invalid_request_error",
                          param="best_of", code=None)
    if body.get("stream") is True and isinstance(best_of, int) and best_of > 1:
        return error_body(400, "Cannot stream results with best_of greater than 1.", type="invalid_request_error",
                          param="best_of", code=None)
    if body.get("stream_options") is not None and body.get("stream") is not True:
        return error_body(400, "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                          type="invalid_request_error", param="stream_options", code=None)
    return None


def deepseek_problem(path: str, body: Any) -> str | None:
    """What DeepSeek's FIM completions refuse beyond OpenAI's schema; None if fine (and for
    its other endpoints, which take what OpenAI's do)."""
    if path != "/v1/completions" or not isinstance(body, dict):
        return None
    unknown = sorted(set(body) - DEEPSEEK_FIELDS)
    if unknown:
        return f"Unrecognized request argument supplied: {unknown[0]}"
    if not isinstance(body.get("prompt"), str):
        return "prompt must be a string"
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens > DEEPSEEK_MAX_TOKENS:
        return f"max_tokens must be at most {DEEPSEEK_MAX_TOKENS}"
    return None


def _new_text(prompt: str, j: int, body: dict[str, Any]) -> tuple[str, str]:
    """Choice ``j``'s new text for ``prompt`` and its finish reason."""
    text = COMPLETION_PREFIX + prompt[-80:] + (f" #{j}" if j else "")
    suffix = body.get("suffix")
    if isinstance(suffix, str) and suffix:
        text += " … " + suffix[:40]
    finish = "length"
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    cuts = [text.find(s) for s in stops if s and s in text]
    limit = body.get("max_tokens")
    limit = DEFAULT_MAX_TOKENS if limit is None else limit
    if cuts and min(cuts) <= limit * 4:
        return text[: min(cuts)], "stop"
    if len(text) <= limit * 4:
        finish = "stop"
    return text[: limit * 4], finish


def _logprobs(text: str, offset: int, top: int) -> dict[str, Any]:
    tokens = [text[i : i + 4] for i in range(0, len(text), 4)]
    return {"tokens": tokens, "token_logprobs": [LOGPROB] * len(tokens),
            "top_logprobs": [{t: LOGPROB} for t in tokens] if top else [],
            "text_offset": [offset + 4 * i for i in range(len(tokens))]}


def read_completion(body: dict[str, Any], number: int, id_prefix: str) -> dict[str, Any]:
    """The ``text_completion`` object answering the (valid) request ``body``."""
    n = body.get("n") or 1
    choices: list[dict[str, Any]] = []
    completion_tokens = 0
    for p, prompt in enumerate(prompts_of(body["prompt"])):
        for j in range(n):
            new, finish = _new_text(prompt, j, body)
            completion_tokens += math.ceil(len(new) / 4)
            head = prompt if body.get("echo") is True else ""
            logprobs = None
            if body.get("logprobs") is not None:
                logprobs = _logprobs(head + new, 0, body["logprobs"])
            choices.append({"text": head + new, "index": p * n + j, "logprobs": logprobs, "finish_reason": finish})
    prompt_tokens = _prompt_tokens(body["prompt"])
    return {"id": f"cmpl-{id_prefix}{number:017d}", "object": "text_completion", "created": int(time.time()),
            "model": body["model"], "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


def completion_body(completion: dict[str, Any]) -> bytes:
    body: bytes = orjson.dumps(completion)
    return body


def completion_frames(completion: dict[str, Any], include_usage: bool) -> list[bytes]:
    """The stream: per choice its text in pieces (the last with its finish reason), a
    usage-only chunk when asked for, then ``data: [DONE]``."""
    base = {k: completion[k] for k in ("id", "object", "created", "model")}

    def event(choices: list[dict[str, Any]], usage: Any = None) -> bytes:
        obj = {**base, "choices": choices}
        if include_usage:
            obj["usage"] = usage
        return b"data: " + orjson.dumps(obj) + b"\n\n"

    frames = []
    for choice in completion["choices"]:
        text = choice["text"]
        pieces = [text[i : i + 12] for i in range(0, len(text), 12)] or [""]
        offset = 0
        for k, piece in enumerate(pieces):
            logprobs = None
            if choice["logprobs"] is not None:
                top = len(choice["logprobs"]["top_logprobs"])
                logprobs = _logprobs(piece, offset, top)
            last = k == len(pieces) - 1
            frames.append(event([{"text": piece, "index": choice["index"], "logprobs": logprobs,
                                  "finish_reason": choice["finish_reason"] if last else None}]))
            offset += len(piece)
    if include_usage:
        frames.append(event([], completion["usage"]))
    frames.append(b"data: [DONE]\n\n")
    return frames
