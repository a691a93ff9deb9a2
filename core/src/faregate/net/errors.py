"""Errors of the guarded fetcher: what the caller (and so the client) is told. Messages
name the URL's host and, for a refused address, its category; never the resolved
address (internal DNS is not the caller's business) nor anything from the URL's path,
query or userinfo, where secrets live."""

from __future__ import annotations

from faregate.errors import GatewayError

_HOST_SHOWN = 100  # a hostile URL may carry a huge host; the message stays short


def shown(host: str) -> str:
    return host if len(host) <= _HOST_SHOWN else host[:_HOST_SHOWN] + "…"


def refusal(host: str, category: str, *, resolved: bool) -> str:
    """``api.example.com resolves to a cloud metadata address, which the gateway does not connect to``."""
    how = "resolves to" if resolved else "is"
    article = "an" if category[:1] in "aeiou" else "a"
    return f"{shown(host)} {how} {article} {category} address, which the gateway does not connect to"


class FetchError(GatewayError):
    """A URL the gateway was asked to fetch could not be fetched (bad URL, no such host,
    timeout, too many redirects, response too large): a 400, the URL came from the caller."""

    def __init__(self, message: str, *, code: str = "fetch_failed") -> None:
        super().__init__(400, message, type="invalid_request_error", code=code)


class BlockedAddress(FetchError):
    """The URL's host is, or resolves to, an address of a refused category (loopback,
    private, link-local, cloud metadata …); nothing was connected."""

    def __init__(self, host: str, category: str, *, resolved: bool) -> None:
        super().__init__(refusal(host, category, resolved=resolved), code="blocked_address")
        self.host = host
        self.category = category
