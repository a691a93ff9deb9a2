"""Errors of an exchange; each inbound format renders them in its own shape
(``InboundFormat.render_error``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class ErrorKind(StrEnum):
    """What an error means, in no vendor's words: a provider that reads its vendor's error
    names (a type, a status) sets the kind (:attr:`GatewayError.kind`), and a format
    answering in another vendor's shape names the kind in its own words."""

    INVALID_REQUEST = "invalid_request"
    AUTHENTICATION = "authentication"
    BILLING = "billing"
    PERMISSION = "permission"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    REQUEST_TOO_LARGE = "request_too_large"
    RATE_LIMIT = "rate_limit"
    CANCELLED = "cancelled"
    SERVER = "server"
    NOT_IMPLEMENTED = "not_implemented"
    OVERLOADED = "overloaded"
    TIMEOUT = "timeout"


#: the kind an HTTP status means when nothing says more (the one table every format maps from)
KIND_BY_STATUS: dict[int, ErrorKind] = {
    400: ErrorKind.INVALID_REQUEST, 401: ErrorKind.AUTHENTICATION, 402: ErrorKind.BILLING,
    403: ErrorKind.PERMISSION, 404: ErrorKind.NOT_FOUND, 408: ErrorKind.TIMEOUT, 409: ErrorKind.CONFLICT,
    413: ErrorKind.REQUEST_TOO_LARGE, 429: ErrorKind.RATE_LIMIT, 499: ErrorKind.CANCELLED,
    500: ErrorKind.SERVER, 501: ErrorKind.NOT_IMPLEMENTED, 502: ErrorKind.SERVER, 503: ErrorKind.OVERLOADED,
    504: ErrorKind.TIMEOUT, 529: ErrorKind.OVERLOADED,
}


@dataclass(frozen=True, slots=True)
class RateLimitInfo:
    """The limit a refused caller is over, for the vendor's rate-limit headers (each format
    names them its own way, ``InboundFormat.rate_limit_headers``): requests and tokens per
    window, what is left, and the seconds until the window is whole again. None: no such limit."""

    requests_limit: int | None = None
    requests_remaining: int | None = None
    requests_reset: float | None = None
    tokens_limit: int | None = None
    tokens_remaining: int | None = None
    tokens_reset: float | None = None


class GatewayError(Exception):
    """A request failed with an HTTP ``status``, an error ``type`` and ``code``.

    ``upstream`` marks an error that came from calling an upstream (its error answer or
    a failed connection); a format may pass such an error's own type through to the
    client. Within the attempt loop an upstream's error answer moves on to another
    channel when its status is retryable (the ``AutomaticRetryStatusCodes`` option; never
    a ``bad_response_body``) and may disable the channel (``AutomaticDisableStatusCodes``,
    dead-key codes and types, disable keywords); a failed connection always moves on.
    The gateway's own errors (bad input, auth, quota) come before any attempt and never
    retry. ``retry_after`` (seconds, from the upstream's ``Retry-After``) is sent to the
    client as ``Retry-After`` (and ``Retry-After-Ms``) with the error response;
    ``should_retry`` (an upstream's ``x-should-retry``) as ``X-Should-Retry``. ``detail`` is the full text for
    the operator's error log when ``message`` (what the client sees) is kept neutral.
    ``kind`` is set when ``type`` and ``code`` are a vendor's own names (an upstream's error
    read by its provider): what they mean, for a format that answers in other words.
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "new_api_error",
        code: str | None = None,
        param: str | None = None,
        upstream: bool = False,
        retry_after: float | None = None,
        detail: str | None = None,
        should_retry: bool | None = None,
        kind: ErrorKind | None = None,
        rate_limit: RateLimitInfo | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.upstream = upstream
        self.retry_after = retry_after
        self.detail = detail
        self.should_retry = should_retry
        self.kind = kind
        #: a rate limit's refusal: what the limit says (sent in the vendor's headers)
        self.rate_limit = rate_limit

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"GatewayError({self.status}, {self.code!r}, {self.message!r})"


def error_kind(err: GatewayError) -> ErrorKind:
    """What ``err`` means: the kind its provider read, else its HTTP status's."""
    if err.kind is not None:
        return err.kind
    return KIND_BY_STATUS.get(err.status) or (ErrorKind.SERVER if err.status >= 500 else ErrorKind.INVALID_REQUEST)


def model_not_found(model: str, group: str) -> GatewayError:
    """No channel serves ``model`` to ``group``: OpenAI's 404 (final, the SDKs must not retry)."""
    return GatewayError(404, f"The model `{model}` does not exist or you do not have access to it "
                             f"(no available channel under group {group})",
                        type="invalid_request_error", code="model_not_found", param="model")


def bad_request(message: str, code: str = "invalid_request", param: str | None = None) -> GatewayError:
    return GatewayError(400, message, type="invalid_request_error", code=code, param=param)


def upstream_error(status: int, body: bytes) -> GatewayError:
    """An upstream's error answer in the general ``{"error": {"message", "type", "code"}}``
    shape (OpenAI, Anthropic, Gemini all use it); anything else, an HTML page from a proxy
    say, becomes ``bad response status code N`` and is not passed through. Key-shaped
    strings in the message are redacted: an upstream may echo the key it refused."""
    from faregate import jsonutil
    from faregate.security.redact import redact

    try:
        parsed = jsonutil.loads(body)
    except jsonutil.JSONDecodeError:
        parsed = None
    err = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(err, dict):
        code = err.get("code")
        return GatewayError(status, redact(str(err.get("message") or f"upstream answered {status}")),
                            type=str(err.get("type") or err.get("status") or "upstream_error"),
                            code=str(code) if code is not None else None, upstream=True)
    return GatewayError(status, f"bad response status code {status}", type="upstream_error",
                        code="bad_response_status_code", upstream=True)


def shield(err: GatewayError, secrets: Iterable[str], upstream_status: int | None = None) -> GatewayError:
    """An upstream's error made safe to pass on: the channel's ``secrets`` and key-shaped
    strings redacted everywhere; for an upstream 5xx or auth failure (the operator's
    problem, not the caller's) the client gets a neutral message and the redacted text
    goes to ``detail``, for the operator's error log."""
    from faregate.security.redact import redact

    status = err.status if upstream_status is None else upstream_status
    text = redact(err.message, secrets)
    err.detail = text
    if status >= 500 or status in (401, 403):
        what = "refused the channel's credentials" if status in (401, 403) else "failed"
        err.message = f"the upstream {what} (HTTP {status}); the operator's error log has the details"
    else:
        err.message = text
    return err
