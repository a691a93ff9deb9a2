"""A channel's parameter override (new-api's ``param_override``): changes made to the body
of every upstream request of the channel, the same for a passed-through request and a
converted one (it works on the body the provider built).

Two forms, as new-api's: a plain JSON object whose top-level fields overwrite the
body's (the legacy form), or ``{"operations": [...]}`` (plain fields beside it merged
first), each operation a ``mode`` on a
``path`` (gjson-like: ``a.b.0.c``, ``-1`` the last item, ``*`` every key or item, ``\\.``
a dot in a name) with optional ``conditions`` (``logic`` OR, the default, or AND):

set, delete, move, copy, prepend, append (string, array or object merge), trim_prefix,
trim_suffix, ensure_prefix, ensure_suffix, trim_space, to_lower, to_upper, replace,
regex_replace, prune_objects, return_error (refuse the request with a message, status
and code), sync_fields (a body path and a header, or two of either: the side without a
value gets the other's), set_header (a text with ``{api_key}`` / ``{client_header:Name}``,
or a token map for comma-separated headers), delete_header, copy_header, move_header,
pass_headers.

Conditions compare the body's value at ``path`` (else the request's context: ``model``,
``upstream_model``, ``original_model``, ``request_path``, ``is_retry``, ``retry_index``,
``request_headers.<lower-case name>``) by ``mode`` full | prefix | suffix | contains | gt |
gte | lt | lte, ``invert`` and ``pass_missing_key``.

Everything is checked when the channel is saved (:func:`compile_override` raises
``ValueError`` naming the operation) and compiled once when the snapshot loads the
channel; a channel without an override costs nothing per request.

The package: :mod:`.model` (the compiled form, limits, errors), :mod:`.paths` (addressing
the body), :mod:`.conditions` (whether an operation runs), :mod:`.apply` (running the
operations), :mod:`.compile` (checking and compiling the text) and :mod:`.safe_regex`
(refusing regexes that could take exponential time)."""

from faregate.overrides.params.apply import apply
from faregate.overrides.params.compile import compile_override
from faregate.overrides.params.model import (
    FORBIDDEN_HEADERS,
    PRIVATE_CLIENT_HEADERS,
    Condition,
    Operation,
    OverrideRefused,
    OverrideResult,
    ParamOverride,
    invalid,
)
from faregate.overrides.params.safe_regex import compile_pattern

__all__ = [
    "FORBIDDEN_HEADERS",
    "PRIVATE_CLIENT_HEADERS",
    "Condition",
    "Operation",
    "OverrideRefused",
    "OverrideResult",
    "ParamOverride",
    "apply",
    "compile_override",
    "compile_pattern",
    "invalid",
]
