"""The observer on its own: a report in, a span out (attributes, timing, status, sampling)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from faregate.api import ExchangeReport
from faregate_otel.config import OtelConfig
from faregate_otel.tracing import ExchangeTracer

from .conftest import Exported

REPORT = ExchangeReport(
    request_id="req-123", route="/v1/chat/completions", kind="chat", format="openai.chat", model="gpt-4o-mini",
    user_id=7, key_name="laptop", group="default", channel_id=3, channel_type=1, status=200, attempts=2,
    end_reason="done", stream=True, seconds=1.5, upstream_seconds=1.25, input_tokens=11, output_tokens=22,
    quota=330, client_ip="203.0.113.9")


def config(**changes: Any) -> OtelConfig:
    return dataclasses.replace(OtelConfig(enabled=True, endpoint="", service_name="faregate", sample_ratio=1.0),
                               **changes)


@pytest.fixture
def tracer(exported: Exported) -> Iterator[ExchangeTracer]:
    tracer = ExchangeTracer(config(endpoint="http://collector:4318/v1/traces", service_name="gate-eu"))
    tracer.start()
    yield tracer
    provider = tracer.detach()
    if provider is not None:
        provider.shutdown()


def spans(tracer: ExchangeTracer, exported: Exported) -> list[Any]:
    assert tracer.force_flush()
    return list(exported.exporter.get_finished_spans())


def test_one_span_with_the_conventions_attributes(tracer: ExchangeTracer, exported: Exported) -> None:
    before = time.time_ns()
    tracer(REPORT)
    after = time.time_ns()
    (span,) = spans(tracer, exported)
    assert exported.endpoints == ["http://collector:4318/v1/traces"]
    assert span.name == "chat gpt-4o-mini"
    assert span.kind is SpanKind.SERVER
    assert span.resource.attributes["service.name"] == "gate-eu"
    assert span.status.status_code is StatusCode.UNSET
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 22,
        "http.route": "/v1/chat/completions", "http.response.status_code": 200, "client.address": "203.0.113.9",
        "faregate.request_id": "req-123", "faregate.kind": "chat", "faregate.format": "openai.chat",
        "faregate.stream": True, "faregate.attempts": 2, "faregate.end_reason": "done", "faregate.quota": 330,
        "faregate.overhead_seconds": 0.25, "faregate.upstream_seconds": 1.25, "faregate.user_id": 7,
        "faregate.key_name": "laptop", "faregate.group": "default", "faregate.channel_id": 3,
        "faregate.channel_type": 1,
    }
    # it ended when the observer saw it, and began report.seconds earlier
    assert before <= span.end_time <= after
    assert span.end_time - span.start_time == 1_500_000_000


@pytest.mark.parametrize(("status", "end_reason"), [(502, "bad_response_status_code"), (500, "server_error"),
                                                    (200, "upstream_error"), (200, "timeout"), (200, "eof")])
def test_server_errors_and_upstream_failures_are_errors(tracer: ExchangeTracer, exported: Exported, status: int,
                                                        end_reason: str) -> None:
    tracer(dataclasses.replace(REPORT, status=status, end_reason=end_reason))
    (span,) = spans(tracer, exported)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == end_reason
    assert span.attributes["error.type"] == end_reason


@pytest.mark.parametrize(("status", "end_reason"), [(404, "model_not_found"), (401, "invalid_api_key"),
                                                    (499, "client_gone"), (200, "done")])
def test_client_refusals_are_not_errors(tracer: ExchangeTracer, exported: Exported, status: int,
                                        end_reason: str) -> None:
    tracer(dataclasses.replace(REPORT, status=status, end_reason=end_reason))
    (span,) = spans(tracer, exported)
    assert span.status.status_code is StatusCode.UNSET
    assert "error.type" not in span.attributes
    assert span.attributes["faregate.end_reason"] == end_reason


def test_a_refusal_before_any_channel(tracer: ExchangeTracer, exported: Exported) -> None:
    """Refused before parsing (bad key): no model, user, channel or usage to tell."""
    refused = dataclasses.replace(REPORT, model="", user_id=0, key_name="", group="", channel_id=0, channel_type=0,
                                  status=401, attempts=0, end_reason="invalid_api_key", stream=False,
                                  input_tokens=0, output_tokens=0, quota=0, seconds=0.002, upstream_seconds=0.0)
    tracer(refused)
    (span,) = spans(tracer, exported)
    assert span.name == "chat"
    assert not {"gen_ai.request.model", "gen_ai.usage.input_tokens", "faregate.user_id", "faregate.key_name",
                "faregate.channel_id"} & set(span.attributes)
    assert (span.attributes["faregate.attempts"], span.attributes["http.response.status_code"]) == (0, 401)


def test_other_kinds_name_the_span_without_gen_ai_operation(tracer: ExchangeTracer, exported: Exported) -> None:
    tracer(dataclasses.replace(REPORT, kind="count_tokens", route="/v1/messages/count_tokens",
                               model="claude-sonnet-4"))
    (span,) = spans(tracer, exported)
    assert span.name == "count_tokens claude-sonnet-4"
    assert "gen_ai.operation.name" not in span.attributes
    assert span.attributes["faregate.kind"] == "count_tokens"


def test_sample_ratio_zero_exports_nothing(exported: Exported) -> None:
    tracer = ExchangeTracer(config(sample_ratio=0.0))
    tracer.start()
    for _ in range(20):
        tracer(REPORT)
    assert spans(tracer, exported) == []
    provider = tracer.detach()
    assert provider is not None
    provider.shutdown()


def test_idle_before_start_and_after_detach(exported: Exported) -> None:
    tracer = ExchangeTracer(config())
    tracer(REPORT)  # not started: dropped, nothing made
    assert exported.endpoints == []
    tracer.start()
    tracer(REPORT)
    provider = tracer.detach()
    assert provider is not None
    tracer(dataclasses.replace(REPORT, request_id="after"))  # detached: dropped
    provider.shutdown()  # exports what was queued
    assert [s.attributes["faregate.request_id"] for s in exported.exporter.get_finished_spans()] == ["req-123"]


def test_a_failing_span_never_raises(tracer: ExchangeTracer, exported: Exported, monkeypatch: pytest.MonkeyPatch,
                                     caplog: pytest.LogCaptureFixture) -> None:
    def broken(report: ExchangeReport) -> str:
        raise RuntimeError("boom")

    monkeypatch.setattr("faregate_otel.tracing.span_name", broken)
    tracer(REPORT)  # logged, not raised
    assert "could not trace request req-123" in caplog.text
    assert spans(tracer, exported) == []
