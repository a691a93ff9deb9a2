"""Outbound requests to URLs the gateway is given (not admin-configured channels): the
guarded fetcher and the address checks behind it (SSRF defence). See docs/operations.md."""

from faregate.net.addresses import (
    METADATA_ADDRESSES,
    METADATA_NAMES,
    AddressCategory,
    IPAddress,
    address_category,
    literal_address,
    name_category,
)
from faregate.net.errors import BlockedAddress, FetchError
from faregate.net.fetcher import Fetched, GuardedFetcher
from faregate.net.resolve import Resolver, check_literal, resolve_checked, system_resolver
from faregate.net.urls import url_form_problem

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_NAMES",
    "AddressCategory",
    "BlockedAddress",
    "FetchError",
    "Fetched",
    "GuardedFetcher",
    "IPAddress",
    "Resolver",
    "address_category",
    "check_literal",
    "literal_address",
    "name_category",
    "resolve_checked",
    "system_resolver",
    "url_form_problem",
]
