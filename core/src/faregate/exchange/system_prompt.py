"""A channel's system prompt (new-api's channel settings ``system_prompt`` and
``system_prompt_override``): put first when the request has none; when it has one and the
channel says ``system_prompt_override``, the channel's text goes before it (newline-joined)
and the log row says ``is_system_prompt_overwritten``.

One rule, two places: a request converted for the channel gets it in the canonical model
(whatever the client's format), a request passed through in the client's own format gets
it from that format (:meth:`InboundFormat.add_system_prompt`: OpenAI's system message,
Responses' ``instructions``, Anthropic's ``system``, Gemini's ``systemInstruction``). A
format without a system prompt of its own leaves the body as it is."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.canonical import ChatRequest, Message, TextPart

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange

#: where an exchange keeps what its log row's ``other`` says besides the core's fields
LOG_OTHER = "log_other"


def join_prompt(prompt: str, existing: str) -> str:
    """new-api's order: the channel's prompt, a newline, the request's."""
    return f"{prompt}\n{existing}" if existing else prompt


def with_system_prompt(request: ChatRequest, prompt: str, override: bool) -> tuple[ChatRequest, bool]:
    """``request`` with the channel's prompt (a new request; the given one is not changed)
    and whether the request's own system prompt was changed."""
    messages = request.messages
    first = next((i for i, m in enumerate(messages) if m.role in ("system", "developer")), None)
    if first is None:
        return replace(request, messages=[Message("system", [TextPart(prompt)]), *messages]), False
    if not override:
        return request, False
    own = messages[first]
    parts = list(own.content)
    if parts and isinstance(parts[0], TextPart):
        parts[0] = replace(parts[0], text=join_prompt(prompt, parts[0].text))
    else:
        parts.insert(0, TextPart(prompt))
    changed = [*messages[:first], replace(own, content=parts), *messages[first + 1:]]
    return replace(request, messages=changed), True


def apply_system_prompt(ex: Exchange, as_sent: bool) -> None:
    """Give the attempt's request its channel's system prompt: in the client's own body
    when it goes ``as_sent`` (pass-through, a native endpoint), else in the canonical one."""
    channel = ex.channel
    assert channel is not None
    features = channel.features
    if as_sent:
        added = ex.format.add_system_prompt(ex.body, features.system_prompt, features.system_prompt_override)
        if added is None:
            return
        body, overwritten = added
        ex.body, ex.raw = body, jsonutil.dumps(body)
    else:
        request, overwritten = with_system_prompt(ex.canonical(), features.system_prompt,
                                                  features.system_prompt_override)
        ex.set_canonical(request)
    if overwritten:
        note_log(ex, is_system_prompt_overwritten=True)


def note_log(ex: Exchange, **fields: Any) -> None:
    """Fields for this exchange's log row (``other``)."""
    ex.extra.setdefault(LOG_OTHER, {}).update(fields)
