"""The channel's own changes to an upstream request, once the provider built it: the
parameter override on a JSON body (whatever built it: a passed-through request, a
converted one, any endpoint kind) and the header override. Called only for a channel
that has either; the body is decoded and encoded again only when it has an override."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from faregate import jsonutil
from faregate.contracts import WEBSOCKET, UpstreamRequest
from faregate.overrides.headers import apply_headers
from faregate.overrides.params import PRIVATE_CLIENT_HEADERS, ParamOverride, apply, invalid

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange
    from faregate.state.channel_features import ChannelFeatures


def customize(req: UpstreamRequest, features: ChannelFeatures, key: str, client_headers: Mapping[str, str],
              context: Callable[[], Mapping[str, Any]]) -> bool:
    """Apply ``features`` (the attempt's channel's) to ``req``; True when the parameter
    override changed the body. Raises what the override raises (``return_error``, or a
    ``channel:param_override_invalid`` error). ``context``: what conditions may read
    besides the body (made only when the channel has an override)."""
    override = features.param_override
    header_changes: dict[str, str | None] = {}
    applied = False
    if override is not None and req.method != WEBSOCKET and req.body and _is_json(req):
        header_changes = _override_body(req, override, client_headers, context(), key)
        applied = True
    apply_headers(req, features.headers, key, client_headers)
    for name, value in header_changes.items():
        for existing in [k for k in req.headers if k.lower() == name]:
            del req.headers[existing]
        if value is not None:
            req.headers[name] = value
    return applied


def _is_json(req: UpstreamRequest) -> bool:
    content_type = next((v for k, v in req.headers.items() if k.lower() == "content-type"), "")
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json") or (not media and (req.body or b"")[:1] == b"{")


def _override_body(req: UpstreamRequest, override: ParamOverride, client_headers: Mapping[str, str],
                   context: Mapping[str, Any], key: str) -> dict[str, str | None]:
    assert req.body is not None
    try:
        body = jsonutil.loads(req.body)
    except jsonutil.JSONDecodeError:
        raise invalid("the upstream body is not JSON") from None
    if not isinstance(body, dict):
        raise invalid("the upstream body is not a JSON object")
    result = apply(override, body, context, client_headers, key)
    req.body = jsonutil.dumps(result.body)
    return result.headers if override.touches_headers else {}


def override_context(ex: Exchange) -> dict[str, Any]:
    """What conditions may look at besides the body (new-api's relay context)."""
    headers = {name.lower(): value for name, value in ex.request.headers.items()
               if name.lower() not in PRIVATE_CLIENT_HEADERS}
    return {"model": ex.upstream_model, "upstream_model": ex.upstream_model, "original_model": ex.model,
            "request_path": ex.request.path, "is_retry": ex.attempt > 0, "retry_index": ex.attempt,
            "request_headers": headers}
