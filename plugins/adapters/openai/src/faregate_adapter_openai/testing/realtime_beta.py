"""The Realtime API's beta (preview) protocol, as the fake speaks it where the real service
does: Azure OpenAI's preview path (``/openai/realtime?api-version=…&deployment=…``), which
speaks nothing else. The fake's sessions produce GA events; :func:`to_beta` renames them to
what the beta protocol sends, and :func:`refusal` answers what a GA client sends there the
way the preview service does (``Unknown parameter: 'session.type'.``), so a gateway that
dials the preview path for a GA client is caught.

What differs, from OpenAI's GA migration notes and Azure's preview guide: the output deltas
are ``response.text.*`` / ``response.audio.*`` / ``response.audio_transcript.*`` (GA:
``response.output_*``); an item is announced once, ``conversation.item.created`` (GA:
``conversation.item.added`` then ``.done``); assistant content parts are ``text`` / ``audio``
(GA: ``output_text`` / ``output_audio``); the session is flat (``modalities``,
``input_audio_format``, ``voice``, ``max_response_output_tokens``) where GA nests ``audio``
and names ``type`` and ``output_modalities``.
"""

from __future__ import annotations

from typing import Any

#: GA event names → the beta protocol's (the rest are the same)
RENAMED = {
    "response.output_text.delta": "response.text.delta",
    "response.output_text.done": "response.text.done",
    "response.output_audio.delta": "response.audio.delta",
    "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "conversation.item.added": "conversation.item.created",
}
#: GA events the beta protocol has no counterpart of
UNSENT = frozenset({"conversation.item.done"})
#: what only the GA protocol has in a session, and in a response.create's ``response``
GA_SESSION_FIELDS = ("type", "output_modalities", "audio", "max_output_tokens")
GA_RESPONSE_FIELDS = ("output_modalities", "audio")
_PART_TYPES = {"output_text": "text", "output_audio": "audio"}


def refusal(event: dict[str, Any]) -> tuple[str, str] | None:
    """The GA-only parameter a beta session refuses in ``event`` (its message and param)."""
    kind = event.get("type")
    fields, where = ((GA_SESSION_FIELDS, "session") if kind == "session.update"
                     else (GA_RESPONSE_FIELDS, "response") if kind == "response.create" else ((), ""))
    given = event.get(where)
    for name in fields:
        if isinstance(given, dict) and name in given:
            return f"Unknown parameter: '{where}.{name}'.", f"{where}.{name}"
    return None


def client_schema(kind: str) -> str | None:
    """The spec's schema of a beta client event (None for ``session.update``: the spec
    gives it the shape of a created session, ``client_secret`` required)."""
    if kind == "session.update":
        return None
    from faregate_adapter_openai.testing.schema import load_spec

    for name, schema in load_spec()["components"]["schemas"].items():
        if name.startswith("RealtimeBetaClientEvent") and schema["properties"]["type"]["enum"] == [kind]:
            return str(name)
    return None


def modalities(beta: Any) -> list[str]:
    """A beta ``modalities`` list as the fake's GA output modality: ``["text", "audio"]``
    (audio with its transcript) is GA's ``["audio"]``."""
    return ["audio"] if isinstance(beta, list) and "audio" in beta else ["text"]


def session(ga: dict[str, Any]) -> dict[str, Any]:
    """The fake's (GA) session as the beta protocol shows it."""
    out = {key: value for key, value in ga.items() if key not in ("type", "output_modalities", "audio",
                                                                   "max_output_tokens")}
    audio = ga.get("audio") or {}
    out.update(modalities=["text", "audio"] if "audio" in ga.get("output_modalities", ()) else ["text"],
               input_audio_format="pcm16", output_audio_format="pcm16",
               voice=(audio.get("output") or {}).get("voice", "alloy"), turn_detection=None,
               max_response_output_tokens=ga.get("max_output_tokens", "inf"))
    return out


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    return {**part, "type": _PART_TYPES.get(kind, kind)} if isinstance(kind, str) else part


def _item(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "content": [_part(part) for part in item.get("content") or () if isinstance(part, dict)]}


def to_beta(event: dict[str, Any]) -> dict[str, Any] | None:
    """A GA server event as the beta protocol sends it (None: not sent there)."""
    kind = str(event.get("type"))
    if kind in UNSENT:
        return None
    out = {**event, "type": RENAMED.get(kind, kind)}
    if isinstance(out.get("session"), dict):
        out["session"] = session(out["session"])
    if isinstance(out.get("item"), dict):
        out["item"] = _item(out["item"])
    if isinstance(out.get("part"), dict):
        out["part"] = _part(out["part"])
    response = out.get("response")
    if isinstance(response, dict):
        response = {key: value for key, value in response.items() if key != "output_modalities"}
        response["modalities"] = ["text", "audio"] if "audio" in event["response"].get("output_modalities",
                                                                                        ()) else ["text"]
        response["output"] = [_item(item) for item in response.get("output") or ()]
        out["response"] = response
    return out
