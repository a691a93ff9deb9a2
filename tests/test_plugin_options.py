"""An option of a plugin that is not loaded is refused naming the plugin (the core's static
table, faregate.state.plugin_options), and that table matches what the plugins declare."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

from faregate.api import OptionSpec
from faregate.plugins import load_plugins
from faregate.state.plugin_options import PLUGIN_OPTIONS, plugin_of_option
from faregate.testing.harness import AdminClient, GatewayServer


def declared_options() -> dict[str, list[str]]:
    """distribution → the option names its ``register_settings`` declares"""
    found: dict[str, list[str]] = {}
    for entry in importlib.metadata.entry_points(group="faregate"):
        hook = getattr(entry.load(), "register_settings", None)
        if hook is None or entry.dist is None:
            continue
        items: list[Any] = []
        hook(items.append)
        keys = [item.key for item in items if isinstance(item, OptionSpec)]
        if keys:
            found[entry.dist.name] = keys
    return found


def test_the_table_names_the_plugin_of_every_plugin_option() -> None:
    declared = declared_options()
    assert set(declared) == set(PLUGIN_OPTIONS)  # a plugin with options of its own is in the table
    for plugin, keys in declared.items():
        for key in keys:
            assert plugin_of_option(key) == plugin, key


@pytest.mark.parametrize(("key", "plugin"), [("StripeApiSecret", "faregate-payment-stripe"),
                                             ("SMTPServer", "faregate-auth-email"),
                                             ("passkey.enabled", "faregate-auth-passkeys"),
                                             ("PayAddress", "faregate-payment-epay")])
async def test_an_option_of_a_missing_plugin_names_it(key: str, plugin: str, make_gateway: Any) -> None:
    gw: GatewayServer = await make_gateway(plugins=load_plugins(allow=["faregate-auth-totp"]))
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    answer = await admin.call("PUT", "/api/option/", json={"key": key, "value": "x"})
    assert answer["success"] is False
    assert answer["message"] == (f"unknown option {key!r}: it is an option of the {plugin} plugin, "
                                 "which is not installed")
    plain = await admin.call("PUT", "/api/option/", json={"key": "NoSuchOption", "value": "x"})
    assert plain["message"] == "unknown option 'NoSuchOption'"
    await admin.close()
