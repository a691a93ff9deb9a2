"""The exporter seam: every test that asks for ``exported`` gets the plugin's spans in an
``InMemorySpanExporter`` instead of an OTLP collector."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from faregate_otel import tracing


@dataclass
class Exported:
    exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    #: the ``otel_endpoint`` of every exporter the plugin made
    endpoints: list[str] = field(default_factory=list)

    def make(self, endpoint: str) -> InMemorySpanExporter:
        self.endpoints.append(endpoint)
        return self.exporter


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Exported:
    found = Exported()
    monkeypatch.setattr(tracing, "exporter_factory", found.make)
    return found
