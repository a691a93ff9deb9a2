"""The ``pytest11`` entry point: pytest loads it in every environment where faregate is
installed, also without the ``testing`` extra (pytest-asyncio, hypothesis …). Then it
offers nothing and breaks nothing; with the extra it is :mod:`.pytest_plugin`."""

from __future__ import annotations

try:
    import pytest_asyncio  # noqa: F401
except ImportError:  # without the testing extra
    pass
else:
    from faregate.testing.pytest_plugin import *  # noqa: F403 - the fixtures, found by pytest by name
    from faregate.testing.pytest_plugin import pytest_configure  # noqa: F401
