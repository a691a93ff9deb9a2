"""Outbound requests and the address checks behind them (SSRF defence): the guarded fetcher
for URLs the gateway is given, the address policy (:class:`AddressPolicy`) and the checked
aiohttp connections (:mod:`faregate.net.connector`) every channel call goes through. See
docs/operations.md."""

from faregate.net.addresses import (
    METADATA_ADDRESSES,
    METADATA_NAMES,
    PRIVATE_CATEGORIES,
    AddressCategory,
    IPAddress,
    address_category,
    allowed_categories,
    literal_address,
    name_category,
)
from faregate.net.errors import BlockedAddress, FetchError
from faregate.net.fetcher import Fetched, GuardedFetcher
from faregate.net.resolve import AddressPolicy, Resolver, check_literal, resolve_checked, system_resolver
from faregate.net.urls import url_form_problem

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_NAMES",
    "PRIVATE_CATEGORIES",
    "AddressCategory",
    "AddressPolicy",
    "BlockedAddress",
    "FetchError",
    "Fetched",
    "GuardedFetcher",
    "IPAddress",
    "Resolver",
    "address_category",
    "allowed_categories",
    "check_literal",
    "literal_address",
    "name_category",
    "resolve_checked",
    "system_resolver",
    "url_form_problem",
]
