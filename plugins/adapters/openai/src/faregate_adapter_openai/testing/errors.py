"""OpenAI's error bodies (``ErrorResponse``) and the HTML pages of its CDN, as the fake
OpenAI server sends them."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import orjson

__all__ = ["auth_error_message", "error_body", "html_page"]

# status -> (message, type, code) as OpenAI sends them
_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Bad request.", "invalid_request_error", None),
    401: ("Incorrect API key provided: sk-***. You can find your API key at https://platform.openai.com/account/api-keys.",
          "invalid_request_error", "invalid_api_key"),
    403: ("Country, region, or territory not supported", "request_forbidden", "unsupported_country_region_territory"),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error", "model_not_found"),
    408: ("Request timed out.", "timeout", None),
    409: ("Conflict.", "invalid_request_error", None),
    413: ("Request too large.", "invalid_request_error", None),
    422: ("Unprocessable entity.", "invalid_request_error", None),
    429: ("Rate limit reached for requests. Please try again in 1s. "
          "Visit https://platform.openai.com/account/rate-limits to learn more.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
    504: ("Gateway timeout.", "server_error", None),
}

_UNSET: Any = object()


def error_body(status: int, message: str | None = None, *, type: str | None = None, param: str | None = None,
               code: str | None = _UNSET) -> bytes:
    """An OpenAI error JSON body (``ErrorResponse``) for ``status``.

    Unspecified ``message``/``type``/``code`` take OpenAI's usual values for ``status``.
    """
    entry = _ERRORS.get(status)
    if entry is None:
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "Error"
        entry = (phrase + ".", "server_error" if status >= 500 else "invalid_request_error", None)
    body: bytes = orjson.dumps({"error": {
        "message": entry[0] if message is None else message,
        "type": entry[1] if type is None else type,
        "param": param,
        "code": entry[2] if code is _UNSET else code,
    }})
    return body


def auth_error_message(authorization: str) -> str:
    """OpenAI's 401 message for the ``Authorization`` header sent (the key masked)."""
    key = authorization[7:] if authorization.lower().startswith("bearer ") else authorization
    if key:
        shown = key[:3] + "*" * max(0, len(key) - 7) + key[-4:] if len(key) > 8 else key
        return (f"Incorrect API key provided: {shown}. "
                "You can find your API key at https://platform.openai.com/account/api-keys.")
    return ("You didn't provide an API key. You need to provide your API key in an Authorization "
            "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field "
            "(with blank username) if you're accessing the API from your browser and are prompted for a "
            "username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.")


def html_page(status: int) -> bytes:
    """A Cloudflare-style error page, as OpenAI's CDN answers when the origin fails."""
    if status == 524:
        title, detail = "A timeout occurred", "The origin web server timed out responding to this request."
    elif status == 502:
        title, detail = "Bad gateway", "The web server reported a bad gateway error."
    elif status == 503:
        title, detail = "Service unavailable", "The web server is temporarily unavailable."
    else:
        title, detail = "Error", "The web server returned an unknown error."
    return (
        '<!DOCTYPE html>\n<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->\n'
        f'<html lang="en-US"><head><title>api.openai.com | {status}: {title}</title>'
        '<meta charset="UTF-8" /></head><body><div id="cf-wrapper"><div id="cf-error-details">'
        f'<h1><span class="cf-error-type">{title}</span> <span class="code-label">Error code {status}</span></h1>'
        f"<p>{detail}</p><p>Cloudflare Ray ID: <strong>8f0fake0fake0000</strong></p>"
        "</div></div></body></html>\n"
    ).encode()
