"""The Replicate plugin's test kit: :class:`FakeReplicate`, a fake Replicate API (see
:mod:`.fake`), what it checks (:mod:`.schema`) and the ``fake_replicate`` pytest fixture
(:mod:`.fixtures`, a ``pytest11`` entry point)."""

from __future__ import annotations

from faregate_adapter_replicate.testing.fake import FLUX_PRO, FLUX_SCHNELL, PNG, FakeReplicate

__all__ = ["FLUX_PRO", "FLUX_SCHNELL", "PNG", "FakeReplicate"]
