"""The Vertex plugin's test kit: :class:`FakeVertex`, a fake Vertex AI serving both
publishers (see :mod:`.fake`), :class:`FakeGoogleOAuth`, a fake OAuth token endpoint that
verifies service accounts' signed assertions (:mod:`.oauth`), test service accounts
(:mod:`.accounts`), Vertex's request and response schemas (:mod:`.schema`), and the
``fake_google_oauth``, ``vertex_account`` and ``fake_vertex`` pytest fixtures
(:mod:`.fixtures`, a ``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_vertex.testing.accounts import PROJECT, TestServiceAccount, make_service_account
from faregate_adapter_vertex.testing.fake import API_KEY, CLAUDE_MODELS, FakeVertex
from faregate_adapter_vertex.testing.oauth import FakeGoogleOAuth

__all__ = ["API_KEY", "CLAUDE_MODELS", "PROJECT", "FakeGoogleOAuth", "FakeVertex", "TestServiceAccount",
           "make_service_account"]
