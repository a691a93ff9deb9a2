"""Which category an address or host name falls in: the stdlib ``ipaddress`` properties,
plus the few ranges and names it has no property for (cloud metadata, CGNAT, NAT64).
Pure functions, no I/O: resolving names is :mod:`faregate.net.resolve`'s job."""

from __future__ import annotations

import re
import socket
from enum import StrEnum
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from urllib.parse import unquote

IPAddress = IPv4Address | IPv6Address


class AddressCategory(StrEnum):
    """Why an address is not a public internet address (the value is the wording of errors)."""

    UNSPECIFIED = "unspecified"
    LOOPBACK = "loopback"
    LINK_LOCAL = "link-local"
    METADATA = "cloud metadata"
    MULTICAST = "multicast"
    BROADCAST = "broadcast"
    RESERVED = "reserved"
    SHARED = "shared (CGNAT)"
    PRIVATE = "private"
    NON_GLOBAL = "non-global"  # documentation, benchmarking and other special-purpose ranges


#: the inside of the operator's own network (a local vLLM or Ollama, the test suite's fakes, a
#: webhook next door): let through where a ``*_private_addresses`` setting says ``allow``; link-local,
#: cloud metadata, multicast, broadcast and reserved addresses never are
PRIVATE_CATEGORIES = frozenset({AddressCategory.LOOPBACK, AddressCategory.PRIVATE, AddressCategory.UNSPECIFIED,
                                AddressCategory.SHARED, AddressCategory.NON_GLOBAL})


def allowed_categories(policy: str) -> frozenset[AddressCategory]:
    """The categories a ``*_private_addresses`` setting (``allow`` or ``deny``) lets through."""
    return PRIVATE_CATEGORIES if policy == "allow" else frozenset()


#: instance-metadata endpoints: AWS (v4, v6), Alibaba, Azure's wire server (a public
#: address answering only inside Azure), AWS ECS task metadata
METADATA_ADDRESSES = frozenset(ip_address(a) for a in (
    "169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16", "169.254.170.2",
))
#: names of metadata servers (GCP answers on both), refused before any DNS
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})

_CGNAT = IPv4Network("100.64.0.0/10")  # RFC 6598; ipaddress has no property for it
_BROADCAST = IPv4Address("255.255.255.255")
_NAT64 = IPv6Network("64:ff9b::/96")  # RFC 6052: the last 32 bits are the IPv4 reached
_NAT64_LOCAL = IPv6Network("64:ff9b:1::/48")  # RFC 8215, site-local translation
#: what inet_aton (and so getaddrinfo) reads as IPv4: 1 to 4 parts, each decimal, 0-octal or 0x-hex
_INET_ATON = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}", re.IGNORECASE)


def normalize_host(host: str) -> str:
    """Lower case, no brackets, no trailing dots (``localhost.`` is ``localhost``), the
    IPv6 zone (``%25eth0``) dropped: it does not change the category."""
    text = unquote(host).strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return text.split("%", 1)[0].rstrip(".")


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` spells, in any form a resolver would accept: dotted IPv4,
    IPv6, and the legacy IPv4 forms (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``)."""
    text = normalize_host(host)
    try:
        return ip_address(text)
    except ValueError:
        pass
    if _INET_ATON.fullmatch(text):
        try:
            return IPv4Address(socket.inet_aton(text))  # the C parser getaddrinfo itself uses
        except OSError:
            return None
    return None


def name_category(host: str) -> AddressCategory | None:
    """The category of a host *name* known without DNS: ``localhost`` and ``*.localhost``
    (RFC 6761: always loopback) and the metadata servers' names."""
    name = normalize_host(host)
    if name in ("localhost", "localhost.localdomain") or name.endswith(".localhost"):
        return AddressCategory.LOOPBACK
    if name in METADATA_NAMES:
        return AddressCategory.METADATA
    return None


def _embedded_ipv4(ip: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address reaches through mapping or translation."""
    if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d is a.b.c.d on a dual-stack socket
        return ip.ipv4_mapped
    if ip.sixtofour is not None:  # 2002:aabb:ccdd::/48
        return ip.sixtofour
    if ip in _NAT64:
        return IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_category(ip: IPAddress) -> AddressCategory | None:
    """The category of ``ip``, ``None`` for a public (globally routable) address."""
    if isinstance(ip, IPv6Address):
        ip = IPv6Address(int(ip))  # without a zone, so comparisons and sets match
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            return address_category(embedded)
    if ip in METADATA_ADDRESSES:
        return AddressCategory.METADATA
    if ip.is_unspecified:
        return AddressCategory.UNSPECIFIED
    if ip.is_loopback:
        return AddressCategory.LOOPBACK
    if ip.is_link_local:
        return AddressCategory.LINK_LOCAL
    if ip.is_multicast:
        return AddressCategory.MULTICAST
    if ip == _BROADCAST:
        return AddressCategory.BROADCAST
    if ip.is_reserved:  # before is_private, which also covers 240.0.0.0/4
        return AddressCategory.RESERVED
    if isinstance(ip, IPv4Address) and ip in _CGNAT:
        return AddressCategory.SHARED
    if ip.is_private or (isinstance(ip, IPv6Address) and (ip.is_site_local or ip in _NAT64_LOCAL)):
        return AddressCategory.PRIVATE
    if not ip.is_global:
        return AddressCategory.NON_GLOBAL
    return None
