"""Which plugin declares which of new-api's options: when that plugin is not loaded its options
are not declared, and a write of one is answered with the plugin to install rather than a bare
"unknown option". A static table, so the core imports no plugin; tests/test_plugin_options.py
checks it against what the installed plugins declare."""

from __future__ import annotations

#: distribution → the option names it declares (exact) and the prefixes of its others
PLUGIN_OPTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "faregate-auth-email": ((), ("SMTP",)),
    "faregate-auth-oauth": ((), ("GitHub", "discord.", "LinuxDO", "oidc.")),
    "faregate-auth-passkeys": ((), ("passkey.",)),
    "faregate-auth-telegram": ((), ("Telegram",)),
    "faregate-auth-wechat": ((), ("WeChat",)),
    "faregate-payment-stripe": ((), ("Stripe",)),
    "faregate-payment-creem": ((), ("Creem",)),
    "faregate-payment-epay": (("PayAddress", "PayMethods", "CustomCallbackAddress"), ("Epay",)),
}


def plugin_of_option(key: str) -> str | None:
    """The distribution that declares option ``key``, or None when no plugin we know does."""
    for plugin, (names, prefixes) in PLUGIN_OPTIONS.items():
        if key in names or key.startswith(prefixes):
            return plugin
    return None


def unknown_option_message(key: str) -> str:
    plugin = plugin_of_option(key)
    if plugin is None:
        return f"unknown option {key[:128]!r}"
    return f"unknown option {key[:128]!r}: it is an option of the {plugin} plugin, which is not installed"
