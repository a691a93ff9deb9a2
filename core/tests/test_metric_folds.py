"""The request metrics are counted in plain numbers and folded into prometheus_client's
children before a scrape (faregate.observe.metrics.Metrics.fold): what a scrape shows is what
observing each report on the children directly showed, histograms' buckets and sums included,
over several folds; and nothing is shown twice."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

from prometheus_client import generate_latest

from faregate.gateway import Gateway
from faregate.observe.metrics import Metrics
from faregate.observe.report import ExchangeReport
from faregate.plugins import load_plugins


def report(rng: random.Random) -> ExchangeReport:
    seconds = rng.choice([0.0, 0.00005, 0.0001, 0.3, 1.0, 2.5, 7.0, 400.0, rng.random() * 10])
    attempts = rng.choice([0, 1, 1, 2, 3])
    return ExchangeReport(
        request_id="r", route=rng.choice(["/v1/chat/completions", "/v1/embeddings"]), kind="chat",
        format="openai.chat", model=rng.choice(["", "gpt-4o-mini"]), user_id=1, key_name="k", group="default",
        channel_id=rng.choice([0, 1]) if attempts else 0, channel_type=1, status=rng.choice([200, 429, 502]),
        attempts=attempts, end_reason="done", stream=False, seconds=seconds,
        upstream_seconds=seconds * rng.random(), input_tokens=rng.randint(0, 50), output_tokens=rng.randint(0, 50),
        quota=rng.randint(0, 100), client_ip="127.0.0.1")


def directly(metrics: Metrics, r: ExchangeReport) -> None:
    """Each report observed on the children, as the metrics did before they kept plain numbers."""
    model = metrics.model_label(r.model, r.channel_id)
    channel = str(r.channel_id) if r.channel_id else "none"
    # the children a series made at its first request, counted or not
    metrics.failovers.labels(model), metrics.quota.labels(model), metrics.attempts.labels(channel)
    metrics.tokens.labels(model, "input"), metrics.tokens.labels(model, "output")
    metrics.requests.labels(r.route, model, channel, str(r.status)).inc()
    metrics.duration.labels(r.route).observe(r.seconds)
    metrics.overhead.labels(r.route).observe(r.overhead_seconds)
    if r.attempts:
        metrics.attempts.labels(channel).inc(r.attempts)
        if r.attempts > 1:
            metrics.failovers.labels(model).inc(r.attempts - 1)
    for direction, amount in (("input", r.input_tokens), ("output", r.output_tokens)):
        if amount:
            metrics.tokens.labels(model, direction).inc(amount)
    if r.quota:
        metrics.quota.labels(model).inc(r.quota)


def scraped(metrics: Metrics) -> list[str]:
    """The text a scrape shows, without the ``_created`` times (when each child was made), a
    histogram's sum rounded (a fold adds the observations' sum once: another order of additions)."""
    lines = []
    for line in generate_latest(metrics.registry).decode().splitlines():
        if "_created" in line:
            continue
        if "_sum{" in line:
            name, value = line.rsplit(" ", 1)
            line = f"{name} {float(value):.9g}"
        lines.append(line)
    return lines


def test_folded_counts_are_the_direct_ones(tmp_path: Path) -> None:
    plugins = load_plugins(allow=["faregate-adapter-openai"])
    folded = Metrics(Gateway(plugins, {"data_dir": str(tmp_path / "a")}))
    direct = Metrics(Gateway(plugins, {"data_dir": str(tmp_path / "b")}))
    rng = random.Random(7)
    for rounds in (1, 40, 0, 300):  # several folds, one with nothing new
        for _ in range(rounds):
            r = report(rng)
            folded.observe(r)
            directly(direct, r)
        folded.fold()
        assert scraped(folded) == scraped(direct)
    folded.fold()  # a fold with nothing new adds nothing
    assert scraped(folded) == scraped(direct)
    assert any(line.startswith("faregate_request_duration_seconds_bucket") for line in scraped(folded))


def test_nan_counts_in_no_bucket_as_prometheus_client_does(tmp_path: Path) -> None:
    plugins = load_plugins(allow=["faregate-adapter-openai"])
    folded = Metrics(Gateway(plugins, {"data_dir": str(tmp_path / "a")}))
    direct = Metrics(Gateway(plugins, {"data_dir": str(tmp_path / "b")}))
    odd = dataclasses.replace(report(random.Random(1)), seconds=math.nan, upstream_seconds=0.0)
    folded.observe(odd)
    directly(direct, odd)
    folded.fold()
    assert scraped(folded) == scraped(direct)
