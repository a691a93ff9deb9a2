"""The plugin's options (new-api's ``Creem…``, edited in the console) and settings
(``FAREGATE_CREEM_…``), apart from the provider that reads them: ``faregate config show``
declares them without importing the payment routes and their HTTP client."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from faregate.api import OptionSpec, Setting, json_loads, option_parsers

#: the most quota one product may bring (the wallet's ceiling)
MAX_QUOTA = 2**53


@dataclass(frozen=True, slots=True)
class Product:
    product_id: str
    name: str
    price: Decimal
    currency: str
    quota: int

    def as_json(self) -> dict[str, Any]:
        return {"productId": self.product_id, "name": self.name, "price": float(self.price),
                "currency": self.currency, "quota": self.quota}


def products(text: str) -> tuple[Product, ...]:
    """new-api's ``CreemProducts``: ``[{"productId", "name", "price", "currency", "quota"}]``."""
    from faregate.api import minor_unit  # the money rules: only when the option is read

    if not text.strip():
        return ()
    try:
        raw = json_loads(text)
    except ValueError:
        raise ValueError("expected a JSON array of products") from None
    if not isinstance(raw, list) or len(raw) > 100:
        raise ValueError("expected a JSON array of at most 100 products")
    found: list[Product] = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise ValueError(f"product {n}: expected an object")
        product_id, name, price = item.get("productId"), item.get("name", ""), item.get("price")
        currency, quota = item.get("currency", "USD"), item.get("quota")
        if not isinstance(product_id, str) or not 1 <= len(product_id) <= 128 or \
                any(p.product_id == product_id for p in found):
            raise ValueError(f"product {n}: productId must be 1 to 128 characters and unique")
        if not isinstance(name, str) or len(name) > 128:
            raise ValueError(f"product {n}: name must be at most 128 characters")
        if isinstance(price, bool) or not isinstance(price, int | float) or not math.isfinite(price) \
                or not 0 < price <= 1e7:
            raise ValueError(f"product {n}: price must be a number above 0")
        if not isinstance(currency, str) or len(currency) != 3 or not currency.isascii() or not currency.isalpha():
            raise ValueError(f"product {n}: currency must be a three-letter ISO 4217 code")
        if isinstance(quota, bool) or not isinstance(quota, int) or not 0 < quota <= MAX_QUOTA:
            raise ValueError(f"product {n}: quota must be a whole number above 0")
        currency = currency.upper()
        amount = Decimal(str(price))
        if amount != amount.quantize(minor_unit(currency)):
            raise ValueError(f"product {n}: price has more decimals than {currency} has")
        found.append(Product(product_id, name, amount, currency, quota))
    return tuple(found)


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("CreemApiKey", "", "Creem API key creating checkouts.", option_parsers.text(255), secret=True),
    OptionSpec("CreemWebhookSecret", "", "The signing secret of the Creem webhook {ServerAddress}/api/creem/webhook.",
               option_parsers.text(255), secret=True),
    OptionSpec("CreemProducts", "[]", 'The products sold: [{"productId", "name", "price", "currency", "quota"}] '
               "(price in major units, quota credited when paid).", products),
    OptionSpec("CreemTestMode", "false", "Use Creem's test API (test-api.creem.io).", option_parsers.boolean),
)


SETTINGS: tuple[Setting, ...] = (
    Setting("creem_api_base", "", "Where Creem's REST API is (a test double or a proxy); empty: Creem's, live or "
            "test by CreemTestMode."),
    Setting("creem_timeout", 30.0, "Seconds to wait for Creem's API.", float),
)
