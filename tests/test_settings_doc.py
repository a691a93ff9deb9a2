"""docs/settings.md's table is the settings' declarations, regenerated (``faregate config table``)."""

from __future__ import annotations

from pathlib import Path

from faregate.settings import CORE_SETTINGS
from faregate.settings.table import markdown_table

DOC = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def test_settings_table_is_current() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text.split("<!-- settings-table:start -->\n", 1)[1].split("<!-- settings-table:end -->", 1)[0]
    assert table == markdown_table(CORE_SETTINGS), "regenerate it: faregate config table"
