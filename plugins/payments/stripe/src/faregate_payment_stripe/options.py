"""The plugin's options (new-api's ``Stripe…``, edited in the console) and settings
(``FAREGATE_STRIPE_…``), apart from the provider that reads them: ``faregate config show``
declares them without importing the payment routes and their HTTP client."""

from __future__ import annotations

from faregate.api import OptionSpec, Setting, option_parsers

#: the largest amount one payment may buy (new-api's limit)
MAX_AMOUNT = 10_000


def _currency(value: str) -> str:
    value = value.strip().upper()
    if len(value) != 3 or not value.isascii() or not value.isalpha():
        raise ValueError("expected a three-letter ISO 4217 currency code")
    return value


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("StripeApiSecret", "", "Stripe secret key (sk_… or a restricted rk_…) creating Checkout Sessions.",
               option_parsers.text(255), secret=True),
    OptionSpec("StripeWebhookSecret", "", "The signing secret (whsec_…) of the Stripe webhook endpoint "
               "{ServerAddress}/api/stripe/webhook.", option_parsers.text(255), secret=True),
    OptionSpec("StripePriceId", "", "A Stripe Price (price_…) sold once per unit; empty: each session is priced "
               "from StripeUnitPrice, the group ratio and the amount discount.", option_parsers.text(255)),
    OptionSpec("StripeUnitPrice", "8.0", "Money per unit bought (one US dollar of quota), in StripeCurrency; with "
               "StripePriceId it must equal that price's unit amount.", option_parsers.number(0, 1e6)),
    OptionSpec("StripeCurrency", "CNY", "The currency of StripeUnitPrice and of the sessions (ISO 4217).", _currency),
    OptionSpec("StripeMinTopUp", "1", "The fewest units one Stripe payment may buy.",
               option_parsers.integer(0, MAX_AMOUNT)),
)


SETTINGS: tuple[Setting, ...] = (
    Setting("stripe_api_base", "https://api.stripe.com", "Where Stripe's REST API is (a test double or a proxy)."),
    Setting("stripe_timeout", 30.0, "Seconds to wait for Stripe's API.", float),
)
