"""What a parameter override compiles to, and what :mod:`.compile` and :mod:`.apply`
share: the limits, the mode names, the headers no operation may touch, and the errors.
Kept apart so the compiled form has one definition both sides import."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from faregate.errors import GatewayError

MAX_OPERATIONS = 100
MAX_CONDITIONS = 20
MAX_PATH = 256
MAX_PATTERN = 256
MAX_OVERRIDE_CHARS = 65_536
#: the largest index a ``set`` may create (an array is padded with nulls up to it)
MAX_INDEX = 1024
#: a regex runs on strings up to this long (longer ones are left as they are)
MAX_REGEX_INPUT = 1 << 20
#: the most concrete paths one wildcard path may expand to
MAX_EXPANSION = 10_000
#: a header value an operation sets from the body (``sync_fields``) or a token list makes
MAX_HEADER_VALUE = 8192
#: entries of a ``set_header`` token map, and of its ``$append``
MAX_TOKENS = 100

PATH_MODES = frozenset({"set", "delete", "prepend", "append", "trim_prefix", "trim_suffix", "ensure_prefix",
                        "ensure_suffix", "trim_space", "to_lower", "to_upper", "replace", "regex_replace",
                        "prune_objects"})
FROM_TO_MODES = frozenset({"move", "copy"})
HEADER_MODES = frozenset({"set_header", "delete_header", "copy_header", "move_header", "pass_headers"})
MODES = PATH_MODES | FROM_TO_MODES | HEADER_MODES | {"return_error", "sync_fields"}
CONDITION_MODES = frozenset({"full", "prefix", "suffix", "contains", "gt", "gte", "lt", "lte"})
#: what the header operations may never touch: set by the HTTP client, or hop-by-hop
FORBIDDEN_HEADERS = frozenset({
    "host", "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "content-length",
})
#: client headers never copied upstream: the caller's own credentials to the gateway, its cookies
PRIVATE_CLIENT_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "cookie", "x-vendor-api-key",
                                    "proxy-authorization", "sec-websocket-key", "sec-websocket-protocol"})

Segment = str | int
Path = tuple[str, ...]


class OverrideRefused(GatewayError):
    """``return_error``: the channel's override refuses the request. ``retry``: another
    channel may take it (``skip_retry`` false)."""

    def __init__(self, status: int, message: str, *, type: str, code: str, retry: bool) -> None:
        super().__init__(status, message, type=type, code=code)
        self.retry = retry


def invalid(message: str) -> GatewayError:
    """An override that cannot apply to this request: a channel error, another channel may serve."""
    return GatewayError(500, f"param override failed: {message}", code="channel:param_override_invalid")


@dataclass(frozen=True, slots=True)
class Condition:
    path: Path
    mode: str
    value: Any
    invert: bool = False
    pass_missing_key: bool = False


@dataclass(frozen=True, slots=True)
class SyncEnd:
    """One side of ``sync_fields``: a body path (``json:``/``body:``, or no prefix) or a
    header (``header:``, its lower-case name)."""

    path: Path = ()
    header: str = ""


@dataclass(frozen=True, slots=True)
class HeaderTokens:
    """``set_header`` with an object value: the header's comma-separated tokens rewritten
    (``replace``: token → its replacements, none to drop it; ``wildcard``: what an
    undeclared token becomes, None to keep it), ``append`` added, and with ``only_declared``
    the undeclared ones dropped."""

    replace: Mapping[str, tuple[str, ...]]
    wildcard: tuple[str, ...] | None = None
    append: tuple[str, ...] = ()
    only_declared: bool = False


@dataclass(frozen=True, slots=True)
class Operation:
    mode: str
    path: Path = ()
    value: Any = None
    keep_origin: bool = False
    source: Path = ()
    target: Path = ()
    from_text: str = ""
    to_text: str = ""
    conditions: tuple[Condition, ...] = ()
    logic_and: bool = False
    pattern: re.Pattern[str] | None = None
    #: prune_objects: what an object must match to be dropped, and whether to look inside
    prune: tuple[Condition, ...] = ()
    prune_and: bool = True
    prune_recursive: bool = True
    #: header operations: header names (lower case)
    headers: tuple[str, ...] = ()
    #: ``set_header``: the caller's header its value is (``{client_header:Name}``), or the tokens map
    client_header: str = ""
    tokens: HeaderTokens | None = None
    #: ``sync_fields``: its two sides
    sync: tuple[SyncEnd, SyncEnd] | None = None


@dataclass(frozen=True, slots=True)
class ParamOverride:
    """A compiled override: the legacy fields to merge, then the operations (new-api applies
    the plain fields of an object beside ``operations`` first)."""

    merge: Mapping[str, Any] | None = None
    operations: tuple[Operation, ...] = ()
    #: whether any operation changes headers (only then are they collected)
    touches_headers: bool = False


@dataclass(slots=True)
class OverrideResult:
    body: Any
    #: header name (lower case) → value to send, or None to remove it
    headers: dict[str, str | None] = field(default_factory=dict)
