"""The local SMTP server every test of this plugin sends to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from faregate_auth_email.testing import LocalSMTP


@pytest.fixture
def smtp() -> Iterator[LocalSMTP]:
    server = LocalSMTP()
    server.start()
    yield server
    server.stop()
