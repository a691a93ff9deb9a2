"""The app's URL rules compile their URL builders on first use (faregate.edge.lazy_rules):
building the app compiles none, and every rule builds the URL werkzeug's own rule builds."""

from __future__ import annotations

from typing import Any

import pytest
from quart.routing import QuartRule
from werkzeug.routing import IntegerConverter, PathConverter, Rule

from faregate.app import create_app
from faregate.edge.lazy_rules import LazyBuilderRule


@pytest.fixture
def app(tmp_path: Any) -> Any:
    return create_app(None, {"data_dir": str(tmp_path)})


def sample_values(rule: Rule) -> dict[str, Any]:
    """A value for each of the rule's variables, by its converter, with characters that need
    quoting, and one unknown value (a query string for ``append_unknown``)."""
    values: dict[str, Any] = {"extra": "a b&c"}
    for name, converter in rule._converters.items():
        if isinstance(converter, IntegerConverter):
            values[name] = 42
        elif isinstance(converter, PathConverter):
            values[name] = "dir/ä b"
        else:
            values[name] = "ä b:c"
    return values


def test_building_the_app_compiles_no_url_builder(app: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    compiled: list[str] = []
    real = Rule._get_func_code

    def counting(code: Any, name: str) -> Any:
        compiled.append(name)
        return real(code, name)

    monkeypatch.setattr(Rule, "_get_func_code", staticmethod(counting))
    built = create_app(None, {"data_dir": str(tmp_path / "second")})
    assert compiled == []
    assert all(isinstance(rule, LazyBuilderRule) for rule in built.url_map.iter_rules())

    rule = next(rule for rule in built.url_map.iter_rules() if rule._converters)
    first = rule.build(sample_values(rule))
    assert rule.build(sample_values(rule)) == first
    assert len(compiled) == 1  # compiled on the first build, then kept


@pytest.mark.parametrize("append_unknown", [True, False])
def test_every_rule_builds_what_werkzeugs_rule_builds(app: Any, append_unknown: bool) -> None:
    rules = list(app.url_map.iter_rules())
    assert len(rules) > 200 and any(rule._converters for rule in rules)
    for rule in rules:
        eager = QuartRule(
            rule.rule,
            defaults=rule.defaults,
            subdomain=rule.subdomain,
            methods=rule.methods,
            endpoint=rule.endpoint,
            strict_slashes=rule.strict_slashes,
            merge_slashes=rule.merge_slashes,
            host=rule.host,
            websocket=rule.websocket,
        )
        eager.bind(app.url_map)  # compiled as werkzeug compiles, not added to the map
        values = sample_values(rule)
        assert rule.build(values, append_unknown) == eager.build(values, append_unknown), rule.rule
        if not rule.arguments:
            assert rule.build({}, append_unknown) == eager.build({}, append_unknown), rule.rule


async def test_url_for_and_matching_use_the_rules(app: Any) -> None:
    rule = next(
        rule
        for rule in app.url_map.iter_rules()
        if any(isinstance(c, IntegerConverter) for c in rule._converters.values())
    )
    values = sample_values(rule)
    async with app.test_request_context("/"):
        from quart import url_for

        url = url_for(rule.endpoint, **values)
    assert url.endswith("?extra=a+b%26c")
    adapter = app.url_map.bind("localhost")
    endpoint, arguments = adapter.match(url.split("?")[0], method=sorted(rule.methods)[0])
    assert endpoint == rule.endpoint
    assert {name: arguments[name] for name in rule._converters} == {name: values[name] for name in rule._converters}
