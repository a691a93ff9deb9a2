"""Running a compiled override on a request's body (per request, on the hot path): the
legacy merge, or each operation whose conditions hold, the body's and the headers'."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from faregate.overrides.params.conditions import _as_text, conditions_hold
from faregate.overrides.params.model import (
    FROM_TO_MODES,
    HEADER_MODES,
    MAX_HEADER_VALUE,
    MAX_REGEX_INPUT,
    HeaderTokens,
    Operation,
    OverrideRefused,
    OverrideResult,
    ParamOverride,
    Segment,
    SyncEnd,
    invalid,
)
from faregate.overrides.params.paths import _MISSING, _resolve_negative, _show, expand, get, put, remove


def apply(override: ParamOverride, body: Any, context: Mapping[str, Any],
          client_headers: Mapping[str, str], key: str = "") -> OverrideResult:
    """``body`` (a parsed JSON object, changed in place) after the override; raises
    :class:`OverrideRefused` (``return_error``) or a ``channel:param_override_invalid``
    :class:`GatewayError` when an operation cannot apply to it. ``key``: the attempt's
    channel key, for ``{api_key}`` in a header an operation sets."""
    result = OverrideResult(body)
    if override.merge is not None:
        if not isinstance(body, dict):
            raise invalid("the body is not a JSON object")
        body.update(copy.deepcopy(dict(override.merge)))
    for op in override.operations:
        if not conditions_hold(result.body, context, op.conditions, op.logic_and):
            continue
        if op.mode in HEADER_MODES:
            _apply_header(op, result.headers, client_headers, key)
        elif op.sync is not None:
            result.body = _sync(op.sync, result.body, result.headers, client_headers)
        elif op.mode == "return_error":
            raise _refusal(op.value)
        elif op.mode in FROM_TO_MODES:
            source = _resolve_negative(result.body, op.source)
            value = get(result.body, source)
            if value is _MISSING:
                raise invalid(f"{op.mode}: {op.from_text!r} does not exist")
            result.body = put(result.body, _resolve_negative(result.body, op.target), copy.deepcopy(value))
            if op.mode == "move":
                remove(result.body, source)
        else:
            for path in expand(result.body, op.path):
                result.body = _apply_path(op, result.body, path, context)
    return result


def _apply_path(op: Operation, body: Any, path: tuple[Segment, ...], context: Mapping[str, Any]) -> Any:
    mode = op.mode
    current = get(body, path)
    if mode == "set":
        if op.keep_origin and current is not _MISSING:
            return body
        return put(body, path, copy.deepcopy(op.value))
    if mode == "delete":
        remove(body, path)
        return body
    if mode == "prune_objects":
        if current is _MISSING:
            return body
        return put(body, path, _prune(current, op, context, root=True))
    if current is _MISSING:
        raise invalid(f"{mode}: {_show(path)} does not exist")
    if mode in ("prepend", "append"):
        return put(body, path, _join(current, op, path, prepend=mode == "prepend"))
    if not isinstance(current, str):
        raise invalid(f"{mode}: {_show(path)} is not a string")
    return put(body, path, _string_op(op, current))


def _join(current: Any, op: Operation, path: tuple[Segment, ...], *, prepend: bool) -> Any:
    value = copy.deepcopy(op.value)
    if isinstance(current, list):
        items = value if isinstance(value, list) else [value]
        return [*items, *current] if prepend else [*current, *items]
    if isinstance(current, str):
        text = value if isinstance(value, str) else _as_text(value)
        return text + current if prepend else current + text
    if isinstance(current, dict):
        if not isinstance(value, dict):
            raise invalid(f"{op.mode}: {_show(path)} is an object, the value is not")
        merged = dict(current)
        for key, item in value.items():
            if not (op.keep_origin and key in merged):
                merged[key] = item
        return merged
    raise invalid(f"{op.mode}: {_show(path)} is neither a string, an array nor an object")


def _string_op(op: Operation, text: str) -> str:
    mode = op.mode
    value = op.value if isinstance(op.value, str) else _as_text(op.value)
    if mode == "trim_prefix":
        return text.removeprefix(value)
    if mode == "trim_suffix":
        return text.removesuffix(value)
    if mode == "ensure_prefix":
        return text if text.startswith(value) else value + text
    if mode == "ensure_suffix":
        return text if text.endswith(value) else text + value
    if mode == "trim_space":
        return text.strip()
    if mode == "to_lower":
        return text.lower()
    if mode == "to_upper":
        return text.upper()
    if mode == "replace":
        return text.replace(op.from_text, op.to_text)
    assert op.pattern is not None  # regex_replace
    if len(text) > MAX_REGEX_INPUT:
        return text
    return op.pattern.sub(_go_replacement(op.to_text), text)


def _go_replacement(template: str) -> str:
    """Go's ``$1`` / ``${name}`` in a replacement, as Python's ``\\g<…>``."""
    escaped = template.replace("\\", "\\\\")
    escaped = re.sub(r"\$\{(\w+)\}", r"\\g<\1>", escaped)
    return re.sub(r"\$(\d+)", r"\\g<\1>", escaped).replace("$$", "$")


def _prune(node: Any, op: Operation, context: Mapping[str, Any], *, root: bool) -> Any:
    if isinstance(node, list):
        return [_prune(item, op, context, root=False) for item in node
                if not (isinstance(item, dict) and conditions_hold(item, context, op.prune, op.prune_and))]
    if isinstance(node, dict):
        if not op.prune_recursive and not root:
            return node
        out: dict[str, Any] = {}
        for key, child in node.items():
            if isinstance(child, dict) and conditions_hold(child, context, op.prune, op.prune_and):
                continue
            out[key] = _prune(child, op, context, root=False) if op.prune_recursive or root else child
        return out
    return node


def _apply_header(op: Operation, headers: dict[str, str | None], client: Mapping[str, str], key: str) -> None:
    mode = op.mode
    if mode == "set_header":
        name = op.headers[0]
        if op.keep_origin and headers.get(name):
            return
        if op.tokens is not None:
            _set_tokens(op.tokens, name, headers, client)
        elif op.client_header:  # {client_header:Name}: the caller's header, left out when it sent none
            value = client.get(op.client_header)
            if value is not None:
                headers[name] = value
        else:
            text = op.value if isinstance(op.value, str) else _as_text(op.value)
            headers[name] = text.replace("{api_key}", key).strip() or None
    elif mode == "delete_header":
        headers[op.headers[0]] = None
    elif mode in ("copy_header", "move_header"):
        source, target = op.headers
        value = headers.get(source) or client.get(source)
        if value is None:
            return
        if not (op.keep_origin and headers.get(target)):
            headers[target] = value
        if mode == "move_header" and source != target:
            headers[source] = None
    else:  # pass_headers
        for name in op.headers:
            value = client.get(name)
            if value is not None and not (op.keep_origin and headers.get(name)):
                headers[name] = value


def _set_tokens(tokens: HeaderTokens, name: str, headers: dict[str, str | None], client: Mapping[str, str]) -> None:
    """new-api's token map on the header's comma-separated tokens (as set by an earlier
    operation, else the caller's): each declared token replaced (or dropped), the others
    kept, replaced by ``*`` or dropped (``$keep_only_declared``), ``$append`` added, no
    token twice; none left removes the header."""
    current = headers.get(name) or client.get(name) or ""
    result: list[str] = []
    for token in (t.strip() for t in current.split(",")):
        if not token:
            continue
        if token in tokens.replace:
            result += tokens.replace[token]
        elif tokens.wildcard is not None:
            result += tokens.wildcard
        elif not tokens.only_declared:
            result.append(token)
    result += tokens.append
    joined = ",".join(dict.fromkeys(result))
    if joined or current:
        headers[name] = joined[:MAX_HEADER_VALUE] or None


def _sync_read(end: SyncEnd, body: Any, headers: Mapping[str, str | None], client: Mapping[str, str]) -> Any:
    """One side's value, or :data:`_MISSING` (absent, null, or blank text: a side to fill)."""
    if end.header:
        text = headers.get(end.header) or client.get(end.header)
        return text if isinstance(text, str) and text.strip() else _MISSING
    value = get(body, _resolve_negative(body, end.path))
    if value is None or (isinstance(value, str) and not value.strip()):
        return _MISSING
    return value


def _sync(sides: tuple[SyncEnd, SyncEnd], body: Any, headers: dict[str, str | None],
          client: Mapping[str, str]) -> Any:
    """new-api's ``sync_fields``: when one side has a value and the other none, the value is
    copied over (both or neither: nothing changes). A header gets only a scalar that makes a
    header value (no CR, LF or NUL, at most 8 KB): the body's text is the caller's."""
    values = [_sync_read(end, body, headers, client) for end in sides]
    if (values[0] is _MISSING) == (values[1] is _MISSING):
        return body
    value, end = (values[0], sides[1]) if values[1] is _MISSING else (values[1], sides[0])
    if not end.header:
        return put(body, _resolve_negative(body, end.path), copy.deepcopy(value))
    if isinstance(value, str | int | float | bool):
        text = _as_text(value)
        if len(text) <= MAX_HEADER_VALUE and not any(c in text for c in "\r\n\x00"):
            headers[end.header] = text
    return body


def _refusal(value: Any) -> OverrideRefused:
    if isinstance(value, str):
        return OverrideRefused(400, value, type="invalid_request_error", code="invalid_request", retry=False)
    spec: dict[str, Any] = value
    status = spec.get("status_code", spec.get("status", 400))
    return OverrideRefused(int(status), str(spec.get("message") or spec.get("msg")),
                           type=str(spec.get("type") or "invalid_request_error"),
                           code=str(spec.get("code") or "invalid_request"), retry=spec.get("skip_retry") is False)
