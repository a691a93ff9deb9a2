"""A multi-key channel's keys and their state, as new-api stores them: the keys newline-separated
in the one encrypted key column, their state in ``channel_info`` (``is_multi_key``,
``multi_key_size``, ``multi_key_status_list`` {index: status}, ``multi_key_disabled_reason`` /
``_time``, ``multi_key_mode`` random|polling). Read and written by the admin's key routes, the
relay's auto-disable and the import; pure functions of the stored text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from faregate import jsonutil
from faregate.state.snapshot import KEY_ENABLED, key_lines, key_statuses


@dataclass(slots=True)
class Key:
    """One key of a multi-key channel and its state."""

    text: str
    status: int = KEY_ENABLED
    reason: str = ""
    time: int = 0


def split_keys(text: str) -> list[str]:
    """The keys of a key field: one per line (a JSON object or array of objects: one per
    object, see :func:`~faregate.state.snapshot.key_lines`), trimmed, blank lines and
    repeats dropped."""
    return list(dict.fromkeys(key_lines(text)))


def read_info(text: str | None) -> dict[str, Any]:
    try:
        value = jsonutil.loads(text) if text else {}
    except jsonutil.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def is_multi_key(info: dict[str, Any]) -> bool:
    return info.get("is_multi_key") is True


def new_info(size: int, mode: str) -> dict[str, Any]:
    """``channel_info`` of a channel added in ``multi_to_single`` mode."""
    return {"is_multi_key": True, "multi_key_size": size, "multi_key_status_list": {},
            "multi_key_polling_index": 0, "multi_key_mode": mode}


def load_keys(key_text: str, info: dict[str, Any]) -> list[Key]:
    statuses = key_statuses(info)
    reasons, times = info.get("multi_key_disabled_reason"), info.get("multi_key_disabled_time")
    reasons = reasons if isinstance(reasons, dict) else {}
    times = times if isinstance(times, dict) else {}
    keys = []
    for i, text in enumerate(key_lines(key_text)):
        status = statuses.get(i, KEY_ENABLED)
        reason, at = (reasons.get(str(i)), times.get(str(i))) if status != KEY_ENABLED else ("", 0)
        keys.append(Key(text, status, reason if isinstance(reason, str) else "",
                        at if isinstance(at, int) and not isinstance(at, bool) else 0))
    return keys


def dump_info(info: dict[str, Any], keys: list[Key]) -> dict[str, Any]:
    """``info`` with the size and per-key state of ``keys`` (indexed by position)."""
    disabled = [(i, k) for i, k in enumerate(keys) if k.status != KEY_ENABLED]
    polling = info.get("multi_key_polling_index")
    return {**info, "is_multi_key": True, "multi_key_size": len(keys),
            "multi_key_status_list": {str(i): k.status for i, k in disabled},
            "multi_key_disabled_reason": {str(i): k.reason for i, k in disabled if k.reason},
            "multi_key_disabled_time": {str(i): k.time for i, k in disabled if k.time},
            "multi_key_polling_index": polling if isinstance(polling, int) and 0 <= polling < len(keys) else 0}


def public_info(text: str | None) -> dict[str, Any]:
    """``channel_info`` as the list and get views show it (no reasons or times, as new-api)."""
    info = read_info(text)
    statuses = key_statuses(info)
    size = info.get("multi_key_size")
    return {"is_multi_key": is_multi_key(info), "multi_key_size": size if isinstance(size, int) else 0,
            "multi_key_status_list": {str(i): s for i, s in statuses.items()} or None,
            "multi_key_polling_index": 0, "multi_key_mode": info.get("multi_key_mode") or ""}


def key_preview(key: str) -> str:
    """Enough of a key to tell it from the others: at most 8 leading and 4 trailing
    characters, and never more than 3/8 of it."""
    head, tail = min(8, len(key) // 4), min(4, len(key) // 8)
    return f"{key[:head]}...{key[len(key) - tail:] if tail else ''}"
