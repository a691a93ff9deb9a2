"""The plugin's settings, declared through ``register_settings``: read from
``FAREGATE_OTEL_*`` environment variables (or the config file, or command-line overrides)
and checked by the core's settings layer, which refuses a bad value at start with one
line naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from faregate.api import Setting, Settings

#: a share of traces: a finite number from 0 to 1
Ratio = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]

SETTINGS = (
    Setting("otel_enabled", False, "Export one OpenTelemetry span per client request over OTLP/HTTP "
            "(plugin faregate-otel).", bool),
    Setting("otel_endpoint", "", "OTLP/HTTP traces URL (http://collector:4318/v1/traces); empty: the exporter's "
            "default (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, else "
            "http://localhost:4318/v1/traces).", str),
    Setting("otel_service_name", "faregate", "service.name of the exported spans.", str),
    Setting("otel_sample_ratio", 1.0, "Share of requests traced, from 0 to 1.", Ratio),
)


@dataclass(frozen=True, slots=True)
class OtelConfig:
    """The plugin's settings, resolved."""

    enabled: bool
    endpoint: str
    service_name: str
    sample_ratio: float

    @classmethod
    def read(cls, settings: Settings) -> OtelConfig:
        """From the gateway's resolved settings (``services.settings``)."""
        return cls(enabled=bool(settings.otel_enabled), endpoint=str(settings.otel_endpoint).strip(),
                   service_name=str(settings.otel_service_name).strip() or "faregate",
                   sample_ratio=float(settings.otel_sample_ratio))
