"""Addressing a JSON body by a gjson-like path (``a.b.0.c``, ``-1`` the last item, ``*``
every key or item, ``\\.`` a dot in a name): parsing, wildcard expansion, and reading,
writing and removing a value with sjson's rules, within the override's limits."""

from __future__ import annotations

from typing import Any

from faregate.overrides.params.model import MAX_EXPANSION, MAX_INDEX, MAX_PATH, Path, Segment, invalid


def parse_path(text: str, what: str = "path") -> Path:
    """``a.b\\.c.0`` → ``("a", "b.c", "0")``; an empty path is the whole body (``()``)."""
    if len(text) > MAX_PATH:
        raise ValueError(f"{what} is longer than {MAX_PATH} characters")
    if not text:
        return ()
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    if any(not p for p in parts):
        raise ValueError(f"{what} {text!r} has an empty segment")
    return tuple(parts)


def _index(segment: str, length: int) -> int | None:
    """An array index from a segment (negative counts from the end); None when it is not one."""
    if segment.lstrip("-").isdigit() and len(segment) <= 8:
        index = int(segment)
        return index + length if index < 0 else index
    return None


def expand(doc: Any, path: Path) -> list[tuple[Segment, ...]]:
    """The concrete paths ``path`` names in ``doc``: wildcards over what exists, negative
    indices resolved; a path without a wildcard is returned as it is (it may not exist yet)."""
    if "*" not in path:
        return [_resolve_negative(doc, path)]
    found: list[tuple[Segment, ...]] = []

    def walk(node: Any, rest: Path, prefix: tuple[Segment, ...]) -> None:
        if len(found) >= MAX_EXPANSION:
            return
        if not rest:
            found.append(prefix)
            return
        head, tail = rest[0], rest[1:]
        if head == "*":
            if isinstance(node, dict):
                for key in list(node):
                    walk(node[key], tail, (*prefix, key))
            elif isinstance(node, list):
                for i, item in enumerate(node):
                    walk(item, tail, (*prefix, i))
            return
        if isinstance(node, dict):
            if not tail:
                found.append((*prefix, head))
            elif head in node:
                walk(node[head], tail, (*prefix, head))
        elif isinstance(node, list):
            index = _index(head, len(node))
            if index is not None and 0 <= index < len(node):
                if tail:
                    walk(node[index], tail, (*prefix, index))
                else:
                    found.append((*prefix, index))

    walk(doc, path, ())
    return found


def _resolve_negative(doc: Any, path: Path) -> tuple[Segment, ...]:
    out: list[Segment] = []
    node = doc
    for segment in path:
        if isinstance(node, list):
            index = _index(segment, len(node))
            if index is not None and 0 <= index < len(node):
                out.append(index)
                node = node[index]
                continue
        out.append(segment)
        node = node.get(segment) if isinstance(node, dict) else None
    return tuple(out)


_MISSING = object()


def get(doc: Any, path: tuple[Segment, ...]) -> Any:
    """The value at ``path``, or :data:`_MISSING`."""
    node = doc
    for segment in path:
        if isinstance(node, dict):
            key = str(segment)
            if key not in node:
                return _MISSING
            node = node[key]
        elif isinstance(node, list):
            index = segment if isinstance(segment, int) else _index(segment, len(node))
            if index is None or not 0 <= index < len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def _container_for(segment: Segment) -> dict[str, Any] | list[Any]:
    return [] if isinstance(segment, int) or (segment.isdigit() and len(segment) <= 8) else {}


def put(doc: Any, path: tuple[Segment, ...], value: Any) -> Any:
    """Set ``path`` to ``value``, making what is missing on the way (sjson's rules: a
    numeric segment makes an array); returns the document (new when ``path`` is empty)."""
    if not path:
        return value
    node = doc
    for i, segment in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, list):
            index = segment if isinstance(segment, int) else _index(segment, len(node))
            if index is None or index < 0:
                raise invalid(f"{_show(path)}: {segment!r} is not an index of an array")
            if index > MAX_INDEX:
                raise invalid(f"{_show(path)}: index {index} is beyond {MAX_INDEX}")
            while len(node) <= index:
                node.append(None)
            if last:
                node[index] = value
                return doc
            if not isinstance(node[index], dict | list):
                node[index] = _container_for(path[i + 1])
            node = node[index]
        elif isinstance(node, dict):
            key = str(segment)
            if last:
                node[key] = value
                return doc
            if not isinstance(node.get(key), dict | list):
                node[key] = _container_for(path[i + 1])
            node = node[key]
        else:  # pragma: no cover - put() always walks containers it made
            raise invalid(f"{_show(path)} runs through a scalar")
    return doc


def remove(doc: Any, path: tuple[Segment, ...]) -> None:
    if not path:
        return
    parent = get(doc, path[:-1])
    segment = path[-1]
    if isinstance(parent, dict):
        parent.pop(str(segment), None)
    elif isinstance(parent, list):
        index = segment if isinstance(segment, int) else _index(segment, len(parent))
        if index is not None and 0 <= index < len(parent):
            del parent[index]


def _show(path: tuple[Segment, ...]) -> str:
    return ".".join(str(s) for s in path) or "(the body)"
