"""Checking and compiling a channel's ``param_override`` text, once per save (a
``ValueError`` naming the operation is the 400) and once per snapshot load, so a request
only runs what already passed."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from faregate import jsonutil
from faregate.overrides.params.conditions import _number
from faregate.overrides.params.model import (
    CONDITION_MODES,
    FORBIDDEN_HEADERS,
    FROM_TO_MODES,
    HEADER_MODES,
    MAX_CONDITIONS,
    MAX_HEADER_VALUE,
    MAX_OPERATIONS,
    MAX_OVERRIDE_CHARS,
    MAX_TOKENS,
    MODES,
    PRIVATE_CLIENT_HEADERS,
    Condition,
    HeaderTokens,
    Operation,
    ParamOverride,
    SyncEnd,
)
from faregate.overrides.params.paths import parse_path
from faregate.overrides.params.safe_regex import compile_pattern

_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
_CLIENT_HEADER = re.compile(r"^\{client_header:([^{}]+)\}$")


def compile_override(text: str | None) -> ParamOverride | None:
    """The override of a channel's ``param_override`` text; None when it has none. Raises
    ``ValueError`` saying what is wrong (the save is a 400 naming ``param_override``)."""
    if not text or not text.strip():
        return None
    if len(text) > MAX_OVERRIDE_CHARS:
        raise ValueError(f"is longer than {MAX_OVERRIDE_CHARS} characters")
    try:
        spec = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        raise ValueError("is not valid JSON") from None
    if not isinstance(spec, dict):
        raise ValueError("must be a JSON object")
    if not spec:
        return None
    if "operations" not in spec:
        return ParamOverride(merge=spec)
    ops = spec["operations"]
    if not isinstance(ops, list):
        raise ValueError("operations must be an array")
    if len(ops) > MAX_OPERATIONS:
        raise ValueError(f"has more than {MAX_OPERATIONS} operations")
    compiled = tuple(_compile_operation(op, n) for n, op in enumerate(ops, 1))
    legacy = {k: v for k, v in spec.items() if k != "operations"}  # new-api merges these first
    headers = any(op.mode in HEADER_MODES or (op.sync is not None and any(end.header for end in op.sync))
                  for op in compiled)
    return ParamOverride(merge=legacy or None, operations=compiled, touches_headers=headers)


def _text(spec: Mapping[str, Any], name: str, where: str) -> str:
    value = spec.get(name, "")
    if not isinstance(value, str):
        raise ValueError(f"{where}: {name} must be a string")
    return value


def _compile_operation(spec: Any, n: int) -> Operation:
    where = f"operation {n}"
    if not isinstance(spec, dict):
        raise ValueError(f"{where}: must be an object")
    mode = spec.get("mode")
    if not isinstance(mode, str) or mode.strip() not in MODES:
        raise ValueError(f"{where}: mode must be one of {', '.join(sorted(MODES))}")
    mode = mode.strip()
    where = f"operation {n} ({mode})"
    keep_origin = spec.get("keep_origin", False)
    if not isinstance(keep_origin, bool):
        raise ValueError(f"{where}: keep_origin must be true or false")
    logic = spec.get("logic", "OR")
    if not isinstance(logic, str) or logic.strip().upper() not in ("AND", "OR", ""):
        raise ValueError(f"{where}: logic must be AND or OR")
    conditions = _compile_conditions(spec.get("conditions"), where)
    base: dict[str, Any] = {"mode": mode, "keep_origin": keep_origin, "conditions": conditions,
            "logic_and": logic.strip().upper() == "AND", "value": spec.get("value")}
    path_text, from_text, to_text = (_text(spec, k, where) for k in ("path", "from", "to"))
    if mode == "set_header":
        return Operation(**base, headers=(_header_name(path_text, where),), **_header_value(spec.get("value"), where))
    if mode in HEADER_MODES:
        return Operation(**base, headers=_header_names(mode, spec, path_text, from_text, to_text, where))
    if mode == "sync_fields":
        if not from_text.strip() or not to_text.strip():
            raise ValueError(f"{where}: from and to are required")
        return Operation(**base, sync=(_sync_end(from_text, f"{where}: from"), _sync_end(to_text, f"{where}: to")),
                         from_text=from_text, to_text=to_text)
    if mode == "return_error":
        _check_refusal(spec.get("value"), where)
        return Operation(**base)
    if mode in FROM_TO_MODES:
        if not from_text or not to_text:
            raise ValueError(f"{where}: from and to are required")
        return Operation(**base, source=parse_path(from_text, f"{where}: from"),
                         target=parse_path(to_text, f"{where}: to"), from_text=from_text, to_text=to_text)
    path = parse_path(path_text, f"{where}: path")
    if not path and mode != "prune_objects":
        raise ValueError(f"{where}: path is required")
    value = spec.get("value")
    extra: dict[str, Any] = {}
    if mode in ("trim_prefix", "trim_suffix", "ensure_prefix", "ensure_suffix") and \
            (value is None or (isinstance(value, str) and not value) or isinstance(value, dict | list)):
        raise ValueError(f"{where}: value must be a non-empty string")
    if mode in ("prepend", "append") and value is None:
        raise ValueError(f"{where}: value is required")
    if mode == "replace" and not from_text:
        raise ValueError(f"{where}: from (the text to replace) is required")
    if mode == "regex_replace":
        extra["pattern"] = compile_pattern(from_text, f"{where}: from")
    if mode == "prune_objects":
        extra.update(_compile_prune(value, where))
    return Operation(**base, path=path, from_text=from_text, to_text=to_text, **extra)


def _compile_conditions(raw: Any, where: str) -> tuple[Condition, ...]:
    if raw is None:
        return ()
    if isinstance(raw, dict):  # the short form: {path: value, ...}, each compared in full
        items: list[Any] = [{"path": k, "mode": "full", "value": v} for k, v in raw.items()]
    elif isinstance(raw, list):
        items = raw
    else:
        raise ValueError(f"{where}: conditions must be an array or an object")
    if len(items) > MAX_CONDITIONS:
        raise ValueError(f"{where}: more than {MAX_CONDITIONS} conditions")
    out = []
    for i, item in enumerate(items, 1):
        at = f"{where}, condition {i}"
        if not isinstance(item, dict):
            raise ValueError(f"{at}: must be an object")
        path, mode = item.get("path"), item.get("mode", "full")
        if not isinstance(path, str) or not path:
            raise ValueError(f"{at}: path is required")
        if not isinstance(mode, str) or mode.lower() not in CONDITION_MODES:
            raise ValueError(f"{at}: mode must be one of {', '.join(sorted(CONDITION_MODES))}")
        mode = mode.lower()
        value = item.get("value")
        number = _number(value)
        if mode in ("gt", "gte", "lt", "lte") and (number is None or not math.isfinite(number)):
            raise ValueError(f"{at}: {mode} compares with a number")
        flags = [item.get(k, False) for k in ("invert", "pass_missing_key")]
        if not all(isinstance(flag, bool) for flag in flags):
            raise ValueError(f"{at}: invert and pass_missing_key must be true or false")
        out.append(Condition(parse_path(path, f"{at}: path"), mode, value, flags[0], flags[1]))
    return tuple(out)


def _compile_prune(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, str) and value.strip():
        return {"prune": (Condition(("type",), "full", value),)}
    if not isinstance(value, dict):
        raise ValueError(f"{where}: value must be a type name or an object of conditions")
    conditions = list(_compile_conditions(value.get("conditions"), where))
    where_clause = value.get("where")
    if where_clause is not None:
        if not isinstance(where_clause, dict):
            raise ValueError(f"{where}: where must be an object")
        conditions += _compile_conditions(where_clause, where)
    if "type" in value:
        conditions.append(Condition(("type",), "full", value["type"]))
    if not conditions:
        raise ValueError(f"{where}: says nothing to match")
    logic, recursive = value.get("logic", "AND"), value.get("recursive", True)
    if not isinstance(logic, str) or logic.upper() not in ("AND", "OR") or not isinstance(recursive, bool):
        raise ValueError(f"{where}: logic must be AND or OR, recursive true or false")
    return {"prune": tuple(conditions), "prune_and": logic.upper() == "AND", "prune_recursive": recursive}


def _check_refusal(value: Any, where: str) -> None:
    if isinstance(value, str):
        if not value.strip() or len(value) > 1000:
            raise ValueError(f"{where}: the message must be 1 to 1000 characters")
        return
    if not isinstance(value, dict):
        raise ValueError(f"{where}: value must be a message or {{message, status_code, code, type, skip_retry}}")
    message = value.get("message", value.get("msg"))
    if not isinstance(message, str) or not message.strip() or len(message) > 1000:
        raise ValueError(f"{where}: message must be 1 to 1000 characters")
    status = value.get("status_code", value.get("status", 400))
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ValueError(f"{where}: status_code must be a whole number from 100 to 599")
    for name in ("code", "type"):
        if name in value and (not isinstance(value[name], str | int) or len(str(value[name])) > 100):
            raise ValueError(f"{where}: {name} must be a short string")
    if "skip_retry" in value and not isinstance(value["skip_retry"], bool):
        raise ValueError(f"{where}: skip_retry must be true or false")


def _header_name(name: str, where: str, *, from_client: bool = False) -> str:
    if not _HEADER_NAME.match(name):
        raise ValueError(f"{where}: {name[:40]!r} is not a valid header name")
    lower = name.lower()
    if lower in FORBIDDEN_HEADERS:
        raise ValueError(f"{where}: {name} cannot be changed")
    if from_client and lower in PRIVATE_CLIENT_HEADERS:
        raise ValueError(f"{where}: the caller's {name} header is never sent upstream")
    return lower


def _sync_end(text: str, where: str) -> SyncEnd:
    """``header:Name``, ``json:path`` / ``body:path``, or a bare path (new-api's targets)."""
    text = text.strip()
    kind, colon, rest = text.partition(":")
    if not colon:
        return SyncEnd(path=parse_path(text, where))
    kind, rest = kind.strip().lower(), rest.strip()
    if not rest:
        raise ValueError(f"{where}: {text[:60]!r} names no field")
    if kind in ("json", "body"):
        return SyncEnd(path=parse_path(rest, where))
    if kind == "header":  # it may be read from the caller's headers, or written: both checked
        return SyncEnd(header=_header_name(rest, where, from_client=True))
    raise ValueError(f"{where}: {text[:60]!r} must start with json:, body: or header:")


def _token(value: Any, where: str) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool) or not str(value).strip() \
            or len(str(value)) > 256 or _BAD_VALUE.search(str(value)) or "," in str(value):
        raise ValueError(f"{where}: a header token is 1 to 256 characters without a comma, CR, LF or NUL")
    return str(value).strip()


def _tokens(value: Any, where: str) -> tuple[str, ...]:
    """A replacement: null (none), a token, a comma-separated list of them, or an array of those."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    if len(items) > MAX_TOKENS:
        raise ValueError(f"{where}: at most {MAX_TOKENS} tokens")
    out: list[str] = []
    for item in items:
        parts = item.split(",") if isinstance(item, str) else [item]
        out += [_token(part, where) for part in parts if not isinstance(part, str) or part.strip()]
    return tuple(dict.fromkeys(out))


def _header_value(value: Any, where: str) -> dict[str, Any]:
    """``set_header``'s value: a text (``{api_key}`` in it the attempt's key; the whole of it
    ``{client_header:Name}``, the caller's header), or new-api's token map: token →
    replacement (null drops it), ``"*"`` for every undeclared token, ``$append``,
    ``$keep_only_declared``."""
    if isinstance(value, dict):
        if not value or len(value) > MAX_TOKENS:
            raise ValueError(f"{where}: a token map holds 1 to {MAX_TOKENS} entries")
        only = value.get("$keep_only_declared", False)
        if not isinstance(only, bool):
            raise ValueError(f"{where}: $keep_only_declared must be true or false")
        replace = {_token(k, where): _tokens(v, where) for k, v in value.items()
                   if k not in ("*", "$append", "$keep_only_declared")}
        wildcard = _tokens(value["*"], where) if "*" in value else None
        tokens = HeaderTokens(replace, wildcard, _tokens(value.get("$append"), where), only)
        return {"tokens": tokens}
    if value is None or isinstance(value, list) or (isinstance(value, str) and _BAD_VALUE.search(value)) \
            or len(str(value)) > MAX_HEADER_VALUE:
        raise ValueError(f"{where}: value must be a string without CR, LF or NUL, or a token map")
    text = value if isinstance(value, str) else str(value)
    match = _CLIENT_HEADER.match(text.strip())
    if match is not None:
        return {"client_header": _header_name(match.group(1).strip(), where, from_client=True)}
    if "{client_header:" in text:
        raise ValueError(f"{where}: {{client_header:…}} must be the whole value")
    return {}


def _header_names(mode: str, spec: Mapping[str, Any], path: str, source: str, target: str,
                  where: str) -> tuple[str, ...]:
    if mode == "delete_header":
        return (_header_name(path, where),)
    if mode in ("copy_header", "move_header"):
        source, target = source or path, target or path
        return (_header_name(source, where, from_client=True), _header_name(target, where))
    value = spec.get("value")  # pass_headers: a list of names, or one comma-separated string
    names = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or len(names) > 50 or \
            not all(isinstance(v, str) and v.strip() for v in names):
        raise ValueError(f"{where}: value must list 1 to 50 header names")
    return tuple(_header_name(v.strip(), where, from_client=True) for v in names)
