"""The ``pytest11`` entry point: offers the fixtures of :mod:`.fixtures` when the plugin's
``testing`` extra is installed, and nothing (without breaking pytest) when it is not."""

from __future__ import annotations

try:
    import pytest_asyncio  # noqa: F401
except ImportError:  # without the testing extra
    pass
else:
    from faregate_adapter_bedrock.testing.fixtures import *  # noqa: F403 - the fixtures, found by pytest by name
