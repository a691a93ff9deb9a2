"""One OpenTelemetry span per exchange, made from its :class:`~faregate.api.ExchangeReport`
when it ends, exported in batches over OTLP/HTTP by a tracer provider of the plugin's own.

The span follows the OpenTelemetry semantic conventions where they apply (GenAI:
``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``; HTTP server:
``http.route``, ``http.response.status_code``, ``client.address``, ``error.type``) and carries
the gateway's own facts under ``faregate.*``. It never holds a key or any text of the
request or the answer: the report has none.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from faregate.api import ExchangeReport
from faregate.api import __version__ as faregate_version
from faregate_otel.config import OtelConfig

log = logging.getLogger("faregate_otel")

#: what ``register_exchange_observers`` takes
Observer = Callable[[ExchangeReport], None]

#: the instrumentation scope of the spans
SCOPE = "faregate_otel"
SCOPE_VERSION = "0.1.0"

#: end reasons that mean the upstream failed (a stream that broke, went idle or ended early):
#: the span is an error even when the client already had its 200
UPSTREAM_FAILURES = frozenset({"upstream_error", "timeout", "eof"})

#: route kinds that are GenAI operations, and their ``gen_ai.operation.name``
GENAI_OPERATIONS = {"chat": "chat", "embeddings": "embeddings", "completions": "text_completion"}


def otlp_exporter(endpoint: str) -> SpanExporter:
    """The OTLP/HTTP (protobuf) exporter; an empty ``endpoint`` leaves the choice to it
    (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_ENDPOINT``, localhost:4318)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint or None)


#: how the exporter is made from ``otel_endpoint``: the seam for tests, which put an
#: ``InMemorySpanExporter`` here instead of talking to a collector
exporter_factory: Callable[[str], SpanExporter] = otlp_exporter


def operation(report: ExchangeReport) -> str:
    """``gen_ai.operation.name`` for GenAI kinds, else the route's kind (``models``, ``count_tokens``)."""
    return GENAI_OPERATIONS.get(report.kind, report.kind)


def span_name(report: ExchangeReport) -> str:
    """``{operation} {model}`` (GenAI conventions), or the operation alone without a model."""
    op = operation(report) or "request"
    return f"{op} {report.model}" if report.model else op


def is_error(report: ExchangeReport) -> bool:
    """A server error, or an upstream failure. A refusal the client caused (4xx: bad key,
    unknown model, no quota) is not an error of the gateway's (HTTP server conventions)."""
    return report.status >= 500 or report.end_reason in UPSTREAM_FAILURES


def span_attributes(report: ExchangeReport) -> dict[str, AttributeValue]:
    attrs: dict[str, AttributeValue] = {}
    if report.kind in GENAI_OPERATIONS:
        attrs["gen_ai.operation.name"] = GENAI_OPERATIONS[report.kind]
    if report.model:
        attrs["gen_ai.request.model"] = report.model
    if report.attempts > 0 or report.input_tokens or report.output_tokens:  # relayed: usage is known
        attrs["gen_ai.usage.input_tokens"] = report.input_tokens
        attrs["gen_ai.usage.output_tokens"] = report.output_tokens
    attrs["http.route"] = report.route
    attrs["http.response.status_code"] = report.status
    if report.client_ip:
        attrs["client.address"] = report.client_ip
    if is_error(report):
        attrs["error.type"] = report.end_reason if report.end_reason not in ("", "done") else str(report.status)
    attrs["faregate.request_id"] = report.request_id
    attrs["faregate.kind"] = report.kind
    if report.format:
        attrs["faregate.format"] = report.format
    attrs["faregate.stream"] = report.stream
    attrs["faregate.attempts"] = report.attempts
    attrs["faregate.end_reason"] = report.end_reason
    attrs["faregate.quota"] = report.quota
    attrs["faregate.overhead_seconds"] = report.overhead_seconds
    attrs["faregate.upstream_seconds"] = report.upstream_seconds
    if report.user_id:
        attrs["faregate.user_id"] = report.user_id
    if report.key_name:  # the label its owner gave the key (the request log shows it too), never the key
        attrs["faregate.key_name"] = report.key_name
    if report.group:
        attrs["faregate.group"] = report.group
    if report.channel_id:
        attrs["faregate.channel_id"] = report.channel_id
        attrs["faregate.channel_type"] = report.channel_type
    return attrs


class ExchangeTracer:
    """The exchange observer: turns each report into a span. Idle (reports are dropped)
    until :meth:`start`, and again after :meth:`detach`; never raises."""

    def __init__(self, config: OtelConfig) -> None:
        self.config = config
        self.provider: TracerProvider | None = None
        self._tracer: trace.Tracer | None = None

    def start(self) -> None:
        """Build the provider: ratio sampler (parent-based), a batch processor on the exporter
        (its own thread: exporting never blocks the event loop), ``service.name``. It is also made
        the process's global provider when none is set, so other OpenTelemetry instrumentation in
        the process exports through it; a provider set by someone else is left alone."""
        if self.provider is not None:
            return
        resource = Resource.create({SERVICE_NAME: self.config.service_name, SERVICE_VERSION: faregate_version})
        provider = TracerProvider(resource=resource,
                                  sampler=ParentBased(TraceIdRatioBased(self.config.sample_ratio)))
        provider.add_span_processor(BatchSpanProcessor(exporter_factory(self.config.endpoint)))
        self.provider = provider
        self._tracer = provider.get_tracer(SCOPE, SCOPE_VERSION)
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            trace.set_tracer_provider(provider)
        log.info("OpenTelemetry tracing on: service %s, endpoint %s, sample ratio %s", self.config.service_name,
                 self.config.endpoint or "(exporter default)", self.config.sample_ratio)

    def __call__(self, report: ExchangeReport) -> None:
        tracer = self._tracer
        if tracer is None:
            return
        try:
            end = time.time_ns()
            start = end - max(0, round(report.seconds * 1e9))
            span = tracer.start_span(span_name(report), kind=SpanKind.SERVER, attributes=span_attributes(report),
                                     start_time=start)
            if is_error(report):
                span.set_status(Status(StatusCode.ERROR, report.end_reason))
            span.end(end_time=end)
        except Exception:  # noqa: BLE001 - tracing must never disturb settlement
            log.exception("could not trace request %s", report.request_id)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export the spans queued so far (blocking: call it from a thread)."""
        return self.provider.force_flush(timeout_millis) if self.provider is not None else True

    def detach(self) -> TracerProvider | None:
        """Stop tracing at once and hand back the provider, for the caller to shut down (which
        exports what is queued, blocking: from a thread)."""
        provider, self.provider, self._tracer = self.provider, None, None
        return provider
