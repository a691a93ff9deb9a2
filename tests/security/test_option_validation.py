"""Every option has a declared type and range (issue 8, #4): a bad value is a 400 naming
the option and is never stored; a bad value already in the table never reaches a request;
``GET /api/option/`` lists every option in force, defaults included, secrets never. The bad
values refused by name are in test_option_validation_refused.py (on one gateway for the module)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from faregate.api import OptionSpec, hookimpl, option_parsers
from faregate.db import models as m
from faregate.state.absent_options import missing_feature
from faregate.testing.harness import AdminClient
from faregate_adapter_openai.testing import FakeOpenAI


async def _put(admin: AdminClient, key: str, value: Any) -> httpx.Response:
    return await admin.http.put("/api/option/", json={"key": key, "value": value},
                                headers={"New-Api-User": str(admin.user_id)})


async def test_good_values_are_stored(admin: AdminClient) -> None:
    for key, value in [("ModelRatio", {"my-model": 2}), ("RetryTimes", 2), ("LogConsumeEnabled", False),
                       ("GroupRatio", '{"default": 1, "free": 0}')]:
        resp = await _put(admin, key, value)
        assert resp.json()["success"], resp.text


async def test_listing_has_every_option_with_defaults_and_no_secrets(admin: AdminClient) -> None:
    await _put(admin, "RetryTimes", "3")
    await m.Option.create(key="StripeApiSecret", value="sk_live_never_listed")
    listed = {item["key"]: item["value"] for item in await admin.ok("GET", "/api/option/")}
    assert listed["RetryTimes"] == "3"
    assert listed["QuotaPerUnit"] == "500000" and "gpt-4o" in listed["ModelRatio"]
    assert "StripeApiSecret" not in listed and "sk_live_never_listed" not in str(listed)


async def test_a_bad_stored_value_never_reaches_a_request(gateway: Any, admin: AdminClient,
                                                          fake_openai: FakeOpenAI) -> None:
    await admin.add_channel(base_url=fake_openai.base_url, models="gpt-4o")
    # written behind the API's back (an old version, a hand edit): the default is used instead
    await m.Option.create(key="ModelPrice", value='{"gpt-4o": "abc"}')
    await m.Option.create(key="QuotaPerUnit", value="1e309")
    await gateway.gateway.snapshot.load_options()
    key = await admin.add_token()
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        resp = await http.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                               json={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status_code == 200, resp.text
    assert gateway.gateway.snapshot.options.quota_per_unit == 500_000


class ShoutOptions:
    @hookimpl
    def register_settings(self, register: Callable[[Any], None]) -> None:
        register(OptionSpec("ShoutVolume", "5", "How loud.", option_parsers.integer(0, 11)))


async def test_plugins_declare_options_in_the_same_registry(make_gateway: Any) -> None:
    from faregate.plugins import load_plugins

    server = await make_gateway(plugins=load_plugins(allow=["faregate-adapter-openai"], extra=[ShoutOptions()]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    assert (await _put(admin, "ShoutVolume", "12")).status_code == 400
    assert (await _put(admin, "ShoutVolume", "11")).json()["success"]
    listed = {item["key"]: item["value"] for item in await admin.ok("GET", "/api/option/")}
    assert listed["ShoutVolume"] == "11"
    await server.gateway.snapshot.load_options()
    assert server.gateway.snapshot.options.value("ShoutVolume") == 11
    await admin.close()


async def test_the_schema_describes_every_option_for_a_form(gateway: Any, admin: AdminClient) -> None:
    """``GET /api/option/schema`` (root): each declared option's kind, bounds and choices, so a
    form can be generated; secrets flagged, with neither value nor default. The options of
    features Faregate lacks are listed (new-api's console reads them) but not offered in a form."""
    await m.Option.create(key="StripeApiSecret", value="sk_live_never_in_the_schema")
    items = await admin.ok("GET", "/api/option/schema")
    schema = {item["key"]: item for item in items}
    listed = {item["key"] for item in await admin.ok("GET", "/api/option/")}
    refused = {key for key, spec in gateway.gateway.option_registry.specs.items() if missing_feature(spec)}
    assert refused and not refused & set(schema)
    assert {k for k, item in schema.items() if not item["secret"]} == listed - refused
    assert schema["RetryTimes"] == {"key": "RetryTimes", "kind": "integer", "default": "0", "secret": False,
                                    "minimum": 0, "maximum": 10,
                                    "description": "Further channels tried after a failed attempt."}
    assert schema["QuotaPerUnit"]["kind"] == "number" and schema["QuotaPerUnit"]["minimum"] == 1
    assert schema["LogConsumeEnabled"]["kind"] == "boolean"
    assert schema["general_setting.quota_display_type"]["choices"] == ["USD", "CNY", "TOKENS", "CUSTOM"]
    assert schema["SystemName"] == {**schema["SystemName"], "kind": "text", "max_length": 128}
    assert schema["ModelRatio"]["kind"] == "json" and schema["AutoGroups"]["kind"] == "json"
    assert schema["AutomaticDisableKeywords"]["kind"] == "lines"
    assert schema["payment_setting.amount_options"]["kind"] == "json"
    secret = schema["StripeApiSecret"]
    assert secret["secret"] is True and secret["default"] == "" and "sk_live" not in str(items)
    # a plugin's own parser function: JSON when its default is, text otherwise
    assert schema["PayMethods"]["kind"] == "json" and schema["StripeCurrency"]["kind"] == "text"
    # what the schema says is what PUT checks
    assert (await _put(admin, "RetryTimes", 11)).status_code == 400
    assert (await _put(admin, "RetryTimes", 10)).json()["success"]


async def test_plugin_options_describe_themselves(make_gateway: Any) -> None:
    from faregate.plugins import load_plugins

    server = await make_gateway(plugins=load_plugins(allow=["faregate-adapter-openai"], extra=[ShoutOptions()]))
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    schema = {item["key"]: item for item in await admin.ok("GET", "/api/option/schema")}
    assert schema["ShoutVolume"]["kind"] == "integer" and schema["ShoutVolume"]["maximum"] == 11
    assert "StripeApiSecret" not in schema  # only installed plugins' options
    await admin.close()
