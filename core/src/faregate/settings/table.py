"""The settings table of docs/settings.md, made from the declarations (so it cannot drift:
tests/test_docs.py compares)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from faregate.settings.declared import Setting


def _default(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def markdown_table(declared: Iterable[Setting]) -> str:
    rows = ["| setting (config file) | environment | new-api name | default | what |", "|---|---|---|---|---|"]
    for setting in declared:
        default = _default(setting.default)
        rows.append(f"| `{setting.name}` | `{setting.env}` | {', '.join(f'`{a}`' for a in setting.aliases)} | "
                    f"{f'`{default}`' if default else '(empty)'} | {setting.description.replace('|', '/')} |")
    return "\n".join(rows) + "\n"
