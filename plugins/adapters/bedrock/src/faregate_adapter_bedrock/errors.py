"""Bedrock's errors read into :class:`GatewayError`: an error answer's ``{"message"}`` body
(the exception's name travels in a header the core does not hand over, so the status
names it), and the exception events of a stream. A key AWS does not know or a signature it
refuses is the channel's dead key: a 401 ``invalid_api_key``, so the core tries another
channel and may disable this one."""

from __future__ import annotations

from faregate.api import GatewayError, JSONDecodeError, json_dumps, json_loads, upstream_error

#: the exception Bedrock answers each status with
EXCEPTIONS = {400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
              408: "ModelTimeoutException", 409: "ConflictException", 424: "ModelErrorException",
              429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"}
#: a stream's exception events (``:exception-type``) and the status each stands for
STREAM_EXCEPTIONS = {"internalServerException": 500, "modelStreamErrorException": 424, "validationException": 400,
                     "throttlingException": 429, "modelTimeoutException": 408, "serviceUnavailableException": 503}
#: words of AWS's answers to a key or signature it refuses (UnrecognizedClientException,
#: InvalidSignatureException, ExpiredTokenException, a bad bearer key)
_DEAD_KEY = ("security token included in the request is invalid", "signature we calculated does not match",
             "security token included in the request is expired", "invalid api key", "api key is invalid",
             "bearer token", "authentication failed")


def _message(body: bytes) -> str | None:
    try:
        obj = json_loads(body)
    except JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    message = obj.get("message", obj.get("Message"))
    return message if isinstance(message, str) else None


def parse_error(status: int, body: bytes) -> GatewayError:
    message = _message(body)
    if message is None:
        return upstream_error(status, body)  # not Bedrock's shape (a proxy's page): neutral
    kind = EXCEPTIONS.get(status, "InternalServerException" if status >= 500 else "ValidationException")
    err = upstream_error(status, json_dumps({"error": {"message": message, "type": kind, "code": kind}}))
    if status in (401, 403) and any(words in message.lower() for words in _DEAD_KEY):
        err.status, err.code, err.type = 401, "invalid_api_key", "UnrecognizedClientException"
        err.message = "the upstream refused the channel's AWS credentials"
    return err


def stream_exception(name: str, payload: bytes) -> GatewayError:
    """A stream's exception event (``name`` its ``:exception-type``)."""
    message = _message(payload) or "upstream stream error"
    status = STREAM_EXCEPTIONS.get(name, 502)
    return GatewayError(status, message, type=name, code=name, upstream=True)


def is_exception(name: str | None) -> bool:
    return name is not None and name.endswith("Exception")

