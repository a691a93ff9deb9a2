"""pytest loads the ``pytest11`` entry points of every installed distribution: without
the ``testing`` extra (no pytest-asyncio) they must load quietly and offer nothing."""

from __future__ import annotations

import subprocess
import sys

import pytest

ENTRIES = ["faregate.testing.pytest_entry", "faregate_adapter_openai.testing.pytest_entry",
           "faregate_adapter_anthropic.testing.pytest_entry"]


@pytest.mark.parametrize("module", ENTRIES)
def test_entry_without_the_testing_extra(module: str) -> None:
    code = (f"import sys; sys.modules['pytest_asyncio'] = None\nimport {module} as m\n"
            "assert not [n for n in vars(m) if n in ('make_gateway', 'fake_openai', 'fake_anthropic')]\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_entries_offer_the_fixtures_with_it() -> None:
    import faregate.testing.pytest_entry as core
    import faregate_adapter_openai.testing.pytest_entry as openai_entry

    assert hasattr(core, "make_gateway") and hasattr(core, "pytest_configure")
    assert hasattr(openai_entry, "fake_openai")
