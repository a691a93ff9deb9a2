"""The plugin's options (new-api's ``PayAddress``, ``Epay…``, ``PayMethods``, edited in the
console), apart from the provider that reads them: ``faregate config show`` declares them
without importing the payment routes."""

from __future__ import annotations

from faregate.api import OptionSpec, json_loads, option_parsers


def _pay_methods(text: str) -> list[dict[str, str]]:
    """new-api's ``PayMethods``: ``[{"name", "type", "color"?, "icon"?, "min_topup"?}]``."""
    if not text.strip():
        return []
    try:
        raw = json_loads(text)
    except ValueError:
        raise ValueError("expected a JSON array of payment methods") from None
    if not isinstance(raw, list) or len(raw) > 50:
        raise ValueError("expected a JSON array of at most 50 payment methods")
    methods: list[dict[str, str]] = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not all(isinstance(k, str) and isinstance(v, str) and len(v) <= 255
                                                 for k, v in item.items()):
            raise ValueError(f"method {n}: expected an object of strings")
        kind = item.get("type", "")
        if not 1 <= len(kind) <= 32 or any(m["type"] == kind for m in methods):
            raise ValueError(f"method {n}: type must be 1 to 32 characters and unique")
        minimum = item.get("min_topup", "")
        if minimum and not (minimum.isascii() and minimum.isdigit() and len(minimum) <= 9):
            raise ValueError(f"method {n}: min_topup must be a whole number")
        methods.append(dict(item))
    return methods


def _address(value: str) -> str:
    value = value.strip().rstrip("/")
    if value and not (value.startswith(("https://", "http://")) and len(value) <= 512):
        raise ValueError("expected an http(s) URL of at most 512 characters")
    return value


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("PayAddress", "", "The Epay gateway's address (the form is posted to {PayAddress}/submit.php).",
               _address),
    OptionSpec("EpayId", "", "The merchant id (pid) at the Epay gateway.", option_parsers.text(64)),
    OptionSpec("EpayKey", "", "The merchant key signing Epay forms and callbacks.", option_parsers.text(255),
               secret=True),
    OptionSpec("PayMethods", '[{"name": "支付宝", "type": "alipay", "color": "rgba(var(--semi-blue-5), 1)"}, '
               '{"name": "微信", "type": "wxpay", "color": "rgba(var(--semi-green-5), 1)"}]',
               'Epay payment methods offered: [{"name", "type", "color", "min_topup"}] (type: the gateway\'s).',
               _pay_methods),
    OptionSpec("CustomCallbackAddress", "", "The gateway's address as the Epay gateway reaches it, for the "
               "callback (empty: ServerAddress).", _address),
)
