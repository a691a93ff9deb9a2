"""Top-up prices: the general payment options (new-api's names) and the one price rule the
amount-based gateways (Epay, Stripe) share. Money is :class:`~decimal.Decimal`, never a float,
rounded to the currency's minor unit (cents; none for JPY and the like)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.billing.pricing import MAX_QUOTA
from faregate.contracts.payments import PaymentRefused, Quote
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

if TYPE_CHECKING:
    from faregate.billing.options import BillingOptions

#: currencies without a minor unit (Stripe's list of zero-decimal currencies)
ZERO_DECIMAL = frozenset({"BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV",
                          "XAF", "XOF", "XPF"})
#: the largest number of units one order may buy
MAX_AMOUNT = 10**9
_CENT = Decimal("0.01")
_ONE = Decimal(1)


def minor_unit(currency: str) -> Decimal:
    """The smallest amount of ``currency``: 0.01, or 1 for a zero-decimal currency."""
    return _ONE if currency.upper() in ZERO_DECIMAL else _CENT


def round_money(money: Decimal, currency: str) -> Decimal:
    return money.quantize(minor_unit(currency), rounding=ROUND_HALF_UP)


def to_minor_units(money: Decimal, currency: str) -> int:
    """``Decimal("12.34")`` USD → 1234 (what card gateways take and report)."""
    return int(round_money(money, currency) / minor_unit(currency))


def from_minor_units(units: int, currency: str) -> Decimal:
    """1234 USD → ``Decimal("12.34")``."""
    return Decimal(units) * minor_unit(currency)


def parse_money(text: str) -> Decimal | None:
    """A decimal amount as gateways write it (``"12.30"``); None when it is not one."""
    try:
        value = Decimal(text.strip())
    except (InvalidOperation, AttributeError):
        return None
    return value if value.is_finite() and value >= 0 else None


# ---- options ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AmountDiscount:
    """new-api's ``payment_setting.amount_discount``: a multiplier by the amount asked, either
    exact (``{"100": 0.95}``) or from a threshold up (``[{"min_amount": 100, "discount": 0.9}]``)."""

    exact: dict[int, float]
    thresholds: tuple[tuple[int, float], ...]
    raw: Any

    def for_amount(self, amount: int) -> Decimal:
        found = self.exact.get(amount)
        if found:
            return Decimal(str(found))
        best, discount = -1, 1.0
        for minimum, value in self.thresholds:
            if best < minimum <= amount:
                best, discount = minimum, value
        return Decimal(str(discount))


def _discount_value(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 < value <= 100:
        raise ValueError(f"{where}: a discount is a number above 0 and at most 100")
    return float(value)


def amount_discount(text: str) -> AmountDiscount:
    if not text.strip():
        return AmountDiscount({}, (), {})
    try:
        raw = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON object or array") from None
    if isinstance(raw, dict):
        if len(raw) > 100:
            raise ValueError("at most 100 discounts")
        exact: dict[int, float] = {}
        for key, value in raw.items():
            if not isinstance(key, str) or not key.isdigit() or len(key) > 10:
                raise ValueError(f"{key!r}: expected a whole amount")
            exact[int(key)] = _discount_value(value, key)
        return AmountDiscount(exact, (), raw)
    if isinstance(raw, list):
        if len(raw) > 100:
            raise ValueError("at most 100 discounts")
        thresholds = []
        for n, item in enumerate(raw, 1):
            minimum = item.get("min_amount") if isinstance(item, dict) else None
            if isinstance(minimum, bool) or not isinstance(minimum, int) or not 0 <= minimum <= MAX_AMOUNT:
                raise ValueError(f"item {n}: min_amount must be a whole number from 0 to {MAX_AMOUNT}")
            thresholds.append((minimum, _discount_value(item.get("discount"), f"item {n}")))
        return AmountDiscount({}, tuple(thresholds), raw)
    raise ValueError("expected a JSON object or array")


def amount_options(text: str) -> list[int]:
    if not text.strip():
        return []
    try:
        raw = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON array of whole amounts") from None
    if not isinstance(raw, list) or len(raw) > 50 or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_AMOUNT for v in raw):
        raise ValueError(f"expected a JSON array of at most 50 whole amounts from 1 to {MAX_AMOUNT}")
    return raw


PAYMENT_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("Price", "7.3", "Money per unit bought (one unit: one US dollar of quota) with Epay, in CNY.",
               specs.number(0, 1e6)),
    OptionSpec("MinTopUp", "1", "The fewest units one online top-up may buy.", specs.integer(0, MAX_AMOUNT)),
    OptionSpec("TopupGroupRatio", '{"default": 1, "vip": 1, "svip": 1}',
               "Top-up price multiplier per user group (0 or missing: 1).", specs.ratio_map()),
    OptionSpec("payment_setting.amount_options", "[10, 20, 50, 100, 200, 500]",
               "Amounts offered on the top-up page (a JSON array).", specs.described(amount_options, "json")),
    OptionSpec("payment_setting.amount_discount", "{}",
               'Price multiplier by amount: {"100": 0.95} (exact amounts) or [{"min_amount": 100, "discount": 0.9}] '
               "(from an amount up).", specs.described(amount_discount, "json")),
)


# ---- the price rule ----------------------------------------------------------------------------
def quote_top_up(options: BillingOptions, *, amount: int, group: str, unit_price: float | Decimal, currency: str,
                 payment_method: str, min_topup: int, discounts: bool = True, label: str = "") -> Quote:
    """The order for ``amount`` as new-api prices it: ``amount`` is in the display unit
    (US dollars of quota; quota itself when ``general_setting.quota_display_type`` is
    ``TOKENS``), at least ``min_topup`` of them; money = dollars × ``unit_price`` × the group's
    ``TopupGroupRatio`` × ``payment_setting.amount_discount`` for this amount (``discounts``
    False: neither multiplier, for a gateway whose own price object decides), rounded to the
    currency's minor unit. Raises :class:`PaymentRefused` for an amount it cannot sell."""
    per_unit = Decimal(str(options.quota_per_unit))
    tokens = options.value("general_setting.quota_display_type") == "TOKENS"
    minimum = min_topup * int(per_unit) if tokens else min_topup
    if amount < max(1, minimum):
        raise PaymentRefused(f"the amount must be at least {max(1, minimum)}")
    if amount > (MAX_AMOUNT * int(per_unit) if tokens else MAX_AMOUNT):
        raise PaymentRefused("the amount is too large")
    dollars = Decimal(amount) / per_unit if tokens else Decimal(amount)
    quota = amount if tokens else int(Decimal(amount) * per_unit)
    if not 0 < quota <= MAX_QUOTA:
        raise PaymentRefused("the amount is too large")
    money = dollars * Decimal(str(unit_price))
    if discounts:
        ratio = Decimal(str(options.value("TopupGroupRatio").get(group) or 1))
        discount: AmountDiscount = options.value("payment_setting.amount_discount")
        money *= ratio * discount.for_amount(amount)
    currency = currency.upper()
    money = round_money(money, currency)
    if money < minor_unit(currency):
        raise PaymentRefused("the amount is too small to pay")
    return Quote(amount=int(dollars), money=money, currency=currency, quota=quota, payment_method=payment_method,
                 label=label)
