"""The core's option sets, declared by their owners and collected by the assembly layer: each key
declared once (the registry keeps the first spec of a key silently, so a second owner's would be
lost), and the gateway's typed options readable from the collected registry alone."""

from __future__ import annotations

from collections import Counter

from faregate.default_plugins.options import CORE_OPTION_SETS, CORE_REGISTRY, GatewayOptions, core_options


def test_each_core_option_is_declared_by_one_owner() -> None:
    counts = Counter(spec.key for specs in CORE_OPTION_SETS for spec in specs)
    assert [key for key, n in counts.items() if n > 1] == []
    assert len(CORE_REGISTRY.specs) == sum(counts.values())


def test_every_default_passes_its_own_parser() -> None:
    for key, default in CORE_REGISTRY.defaults().items():
        CORE_REGISTRY.check(key, default)  # raises OptionError naming the key


def test_typed_options_read_the_collected_registry() -> None:
    options = core_options({"QuotaPerUnit": "1000", "RetryTimes": "3", "SystemName": "Mine"})
    assert isinstance(options, GatewayOptions)
    assert (options.quota_per_unit, options.retry_times, options.system_name) == (1000.0, 3, "Mine")
    assert options.value("RegisterEnabled") is True  # an account option, read by name

