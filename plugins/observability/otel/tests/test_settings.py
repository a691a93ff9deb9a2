"""The plugin's settings, through the core's settings layer and the installed entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from faregate.api import Settings
from faregate.testing.plugins import installed, registered
from faregate_otel.config import SETTINGS
from faregate_otel.tracing import ExchangeTracer

PLUGIN = "faregate-otel"


def test_the_entry_point_loads_with_its_hooks() -> None:
    report = installed(PLUGIN)
    assert report.error is None
    assert sorted(report.hooks) == ["register_exchange_observers", "register_settings", "shutdown", "startup"]


def test_settings_are_declared_with_their_defaults(tmp_path: Path) -> None:
    declared = registered(PLUGIN, "register_settings", tmp_path)
    assert {(s.name, s.default, s.env) for s in declared} == {
        ("otel_enabled", False, "FAREGATE_OTEL_ENABLED"),
        ("otel_endpoint", "", "FAREGATE_OTEL_ENDPOINT"),
        ("otel_service_name", "faregate", "FAREGATE_OTEL_SERVICE_NAME"),
        ("otel_sample_ratio", 1.0, "FAREGATE_OTEL_SAMPLE_RATIO"),
    }


def test_disabled_by_default_registers_no_observer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FAREGATE_OTEL_ENABLED", raising=False)
    assert registered(PLUGIN, "register_exchange_observers", tmp_path) == []
    monkeypatch.setenv("FAREGATE_OTEL_ENABLED", "false")
    assert registered(PLUGIN, "register_exchange_observers", tmp_path) == []


def test_the_environment_enables_and_configures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAREGATE_OTEL_ENABLED", "true")
    monkeypatch.setenv("FAREGATE_OTEL_ENDPOINT", "http://collector:4318/v1/traces")
    monkeypatch.setenv("FAREGATE_OTEL_SERVICE_NAME", "gate-eu")
    monkeypatch.setenv("FAREGATE_OTEL_SAMPLE_RATIO", "0.25")
    (tracer,) = registered(PLUGIN, "register_exchange_observers", tmp_path)
    assert isinstance(tracer, ExchangeTracer)
    assert (tracer.config.enabled, tracer.config.endpoint, tracer.config.service_name, tracer.config.sample_ratio) \
        == (True, "http://collector:4318/v1/traces", "gate-eu", 0.25)
    assert tracer.provider is None  # nothing runs before the gateway starts


@pytest.mark.parametrize("ratio", ["0", "1", "0.5", "1.0"])
def test_sample_ratio_accepts_zero_to_one(ratio: str) -> None:
    assert Settings(SETTINGS, environ={"FAREGATE_OTEL_SAMPLE_RATIO": ratio}).otel_sample_ratio == float(ratio)


@pytest.mark.parametrize("ratio", ["1.5", "-0.1", "nan", "inf", "half"])
def test_a_bad_sample_ratio_is_refused_naming_the_variable(ratio: str) -> None:
    with pytest.raises(ValueError, match=r"^FAREGATE_OTEL_SAMPLE_RATIO=") as refused:
        Settings(SETTINGS, environ={"FAREGATE_OTEL_SAMPLE_RATIO": ratio})
    assert repr(ratio) in str(refused.value)


def test_a_bad_sample_ratio_from_a_flag_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"^--otel-sample-ratio=2"):
        Settings(SETTINGS, overrides={"otel_sample_ratio": 2}, environ={})


def test_a_bad_enabled_flag_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^FAREGATE_OTEL_ENABLED="):
        Settings(SETTINGS, environ={"FAREGATE_OTEL_ENABLED": "sometimes"})
