"""A channel's header override (new-api's ``header_override``): headers set on every
upstream request of the channel, after the provider's own, so they win.

- ``{"Name": "value"}``: ``{api_key}`` in a value is the key of the attempt;
  ``{client_header:Other}`` (the whole value) is the caller's ``Other`` header, and the
  header is left out when the caller sent none.
- pass-through keys: ``"*"`` copies every header of the caller, ``"re:<regex>"`` /
  ``"regex:<regex>"`` those whose name matches; never the hop-by-hop ones, ``Host``,
  ``Content-Length``, ``Content-Type``, ``Accept-Encoding``, cookies, nor the caller's
  credentials to the gateway (``Authorization``, ``X-Api-Key``, ``X-Goog-Api-Key``):
  those would hand the caller's gateway key to the upstream.

Checked when the channel is saved (:func:`compile_headers` raises ``ValueError``),
compiled once when the snapshot loads it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from faregate import jsonutil
from faregate.contracts import UpstreamRequest
from faregate.overrides.params import FORBIDDEN_HEADERS, PRIVATE_CLIENT_HEADERS, compile_pattern

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 field-name
_BAD_VALUE = re.compile(r"[\r\n\x00]")
_CLIENT_HEADER = re.compile(r"^\{client_header:([^{}]+)\}$")
#: never passed through by "*" or a regex key (new-api's list, plus the body's own type)
PASS_SKIP = FORBIDDEN_HEADERS | PRIVATE_CLIENT_HEADERS | frozenset({"accept-encoding", "content-type"})
MAX_HEADERS = 100


@dataclass(frozen=True, slots=True)
class HeaderPlan:
    """What to set: ``(name, value, client header to copy or "")`` in order, and which
    of the caller's headers pass through (``everything`` or the name patterns)."""

    fixed: tuple[tuple[str, str, str], ...] = ()
    everything: bool = False
    patterns: tuple[re.Pattern[str], ...] = ()


def compile_headers(text: str | None) -> HeaderPlan | None:
    """The plan of a channel's ``header_override`` text; None when it sets nothing.
    ``ValueError`` names what is wrong."""
    if not text or not text.strip():
        return None
    try:
        overrides = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        raise ValueError("is not valid JSON") from None
    if not isinstance(overrides, dict):
        raise ValueError("must be a JSON object")
    if len(overrides) > MAX_HEADERS:
        raise ValueError(f"sets more than {MAX_HEADERS} headers")
    fixed: list[tuple[str, str, str]] = []
    everything = False
    patterns: list[re.Pattern[str]] = []
    for name, value in overrides.items():
        if not isinstance(value, str):
            raise ValueError(f"the value of {name[:40]} must be a string")
        if _BAD_VALUE.search(value):
            raise ValueError(f"the value of {name[:40]} must not contain CR, LF or NUL")
        if name == "*":
            everything = True
            continue
        prefix = next((p for p in ("re:", "regex:") if name.lower().startswith(p)), None)
        if prefix is not None:
            patterns.append(compile_pattern(name[len(prefix):], f"{name[:40]}"))
            continue
        if not _TOKEN.match(name):
            raise ValueError(f"{name[:40]!r} is not a valid header name")
        if name.lower() in FORBIDDEN_HEADERS:
            raise ValueError(f"{name} cannot be overridden")
        source = ""
        match = _CLIENT_HEADER.match(value.strip())
        if match is not None:
            source = match.group(1).strip().lower()
            if source in PRIVATE_CLIENT_HEADERS:
                raise ValueError(f"{name}: the caller's {source} header is never sent upstream")
        elif "{client_header:" in value:
            raise ValueError(f"{name}: {{client_header:…}} must be the whole value")
        fixed.append((name, value, source))
    if not fixed and not everything and not patterns:
        return None
    return HeaderPlan(tuple(fixed), everything, tuple(patterns))


def apply_headers(req: UpstreamRequest, plan: HeaderPlan | None, key: str,
                  client_headers: Mapping[str, str]) -> None:
    """Set the plan's headers on ``req`` (the caller's passed through first, the fixed
    ones last: they win)."""
    if plan is None:
        return
    headers = req.headers
    if plan.everything or plan.patterns:
        for name, value in client_headers.items():
            lower = name.lower()
            if lower in PASS_SKIP:
                continue
            if plan.everything or any(p.search(lower) for p in plan.patterns):
                _set(headers, name, value)
    for name, value, source in plan.fixed:
        if source:
            copied = client_headers.get(source)
            if copied is not None:
                _set(headers, name, copied)
            continue
        _set(headers, name, value.replace("{api_key}", key) if "{api_key}" in value else value)


def _set(headers: dict[str, str], name: str, value: str) -> None:
    """Replace a header whatever the case of its name (the provider may have set it)."""
    lower = name.lower()
    for existing in [k for k in headers if k.lower() == lower and k != name]:
        del headers[existing]
    headers[name] = value
