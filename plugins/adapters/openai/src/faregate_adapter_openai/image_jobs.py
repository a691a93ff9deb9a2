"""Image generation by vendors whose API is a job rather than OpenAI's images endpoint
(Replicate's predictions, another plugin's provider): the provider builds the job's request
from the checked generation and reads each answer (the image URLs once done, else the request
that polls the job); this module polls, bounded in count and time, and answers the client in
OpenAI's ``ImagesResponse`` shape: the URLs, or with ``response_format: b64_json`` the images
fetched through the core's guarded fetcher (an upstream's URL is never fetched otherwise).

A provider implements :class:`ImageJobProvider` (structurally: it needs no import of this
plugin) and declares the ``images`` endpoint kind. Polls go to the channel's upstream through
the core's upstream client, as the job's creation did (the channel's proxy with them)."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any, Protocol, runtime_checkable

from faregate.api import (
    AddressCategory,
    Exchange,
    FetchError,
    GatewayError,
    GuardedFetcher,
    UpstreamRequest,
    UpstreamResponse,
    UpstreamTarget,
    UpstreamTransportError,
    json_dumps,
)
from faregate_adapter_openai.settings import PRIVATE_OUTPUTS

#: the first poll's delay; each next one doubles, up to :data:`POLL_MAX_INTERVAL`
POLL_FIRST = 0.25
POLL_MAX_INTERVAL = 2.0
#: a job not done after this many polls, or this long, is a 504 (the client's SDK would time out too)
MAX_POLLS = 200
MAX_WAIT_SECONDS = 300.0
#: the largest job answer read (a prediction object with its logs)
MAX_ANSWER_BYTES = 4 << 20
#: the largest image fetched for ``b64_json`` (OpenAI's own images are a few MB)
MAX_IMAGE_BYTES = 32 << 20
FETCH_TIMEOUT = 60.0
_PRIVATE = frozenset({AddressCategory.LOOPBACK, AddressCategory.PRIVATE})


@runtime_checkable
class ImageJobProvider(Protocol):
    """What a provider implements to serve ``/v1/images/generations`` with a job-style API.
    Both methods are pure; the image operation does the I/O."""

    def build_generation(self, body: dict[str, Any], target: UpstreamTarget) -> UpstreamRequest:
        """The request that starts the job for the checked generation ``body`` (OpenAI's
        fields, ``model`` the channel's name for it; fields OpenAI has not are the client's
        own, for the vendor's model). Raise a 400 ``GatewayError`` for what it cannot take."""
        ...

    def read_generation(self, body: bytes, target: UpstreamTarget) -> list[str] | UpstreamRequest:
        """An answer of the job (its creation's or a poll's): the URLs of its images when it
        is done, else the request that polls it. ``ValueError`` (``KeyError``, ``TypeError``)
        when the answer is not one; a ``GatewayError`` when the job failed."""
        ...


def _malformed() -> GatewayError:
    return GatewayError(502, "upstream sent a malformed image job answer", code="bad_response_body", upstream=True)


def read(provider: ImageJobProvider, body: bytes, target: UpstreamTarget) -> list[str] | UpstreamRequest:
    try:
        result = provider.read_generation(body, target)
    except (ValueError, TypeError, KeyError, AttributeError):  # incl. JSON errors
        raise _malformed() from None
    if isinstance(result, list) and not (result and all(_is_url(u) for u in result)):
        raise _malformed()  # done without images: nothing the client could use
    return result


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://"))


def scrub(err: GatewayError, secrets: tuple[str, ...]) -> GatewayError:
    """``err`` without the channel's keys in what the client and the log see."""
    for secret in secrets:
        if secret:
            err.message = err.message.replace(secret, "[redacted]")
    err.detail = None
    err.upstream = True
    return err


async def _read_capped(resp: UpstreamResponse) -> bytes:
    body = bytearray()
    try:
        while chunk := await resp.read_chunk():
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                raise _malformed()
    finally:
        await resp.aclose()
    return bytes(body)


async def _send(ex: Exchange, request: UpstreamRequest) -> UpstreamResponse:
    """A poll through the core's upstream client and the channel's proxy, as the job's
    creation went (the channel's header and parameter overrides are for its creation only)."""
    proxy = ex.channel.features.proxy if ex.channel is not None else ""
    return await ex.gateway.upstream.send(request, proxy=proxy)


async def wait_for_images(ex: Exchange, provider: ImageJobProvider, target: UpstreamTarget,
                          first: list[str] | UpstreamRequest) -> list[str]:
    """Poll the job until it is done (its image URLs), failed (its ``GatewayError``) or over
    the bounds (504). A poll answered 429 or 5xx, or cut, is polled again; any other status
    is the job's end with the upstream's error."""
    result = first
    deadline = time.monotonic() + MAX_WAIT_SECONDS
    polls = 0
    while not isinstance(result, list):
        if polls >= MAX_POLLS or time.monotonic() >= deadline:
            raise GatewayError(504, "the image job did not finish in time", code="image_job_timeout", upstream=True)
        await asyncio.sleep(min(POLL_MAX_INTERVAL, POLL_FIRST * 2**polls))
        polls += 1
        sent = time.perf_counter()
        try:
            resp = await _send(ex, result)
            status = resp.status_code
            body = await _read_capped(resp)
        except UpstreamTransportError:
            continue
        finally:
            ex.upstream_seconds += time.perf_counter() - sent
        if status == 429 or status >= 500:
            continue
        if status != 200:
            raise scrub(provider_error(provider, status, body), ex.secrets)
        try:
            result = read(provider, body, target)
        except GatewayError as err:
            raise scrub(err, ex.secrets) from None
    return result


def provider_error(provider: Any, status: int, body: bytes) -> GatewayError:
    parse = getattr(provider, "parse_error", None)
    err = parse(status, body) if parse is not None else None
    if not isinstance(err, GatewayError):
        err = GatewayError(502, f"upstream answered {status}", code="upstream_error", upstream=True)
    return err


async def _fetch_b64(url: str, allow: frozenset[AddressCategory]) -> str:
    try:
        async with GuardedFetcher(allow=allow, max_bytes=MAX_IMAGE_BYTES, timeout=FETCH_TIMEOUT,
                                  connect_timeout=10.0) as fetcher:
            got = await fetcher.fetch(url)
    except FetchError as exc:  # its message names the host at most, never the URL's query
        raise GatewayError(502, f"a generated image could not be fetched: {exc.message}", code="image_fetch_failed",
                           upstream=True) from None
    if got.status != 200:
        raise GatewayError(502, f"a generated image could not be fetched (HTTP {got.status})",
                           code="image_fetch_failed", upstream=True)
    # megabytes of base64 off the event loop
    encoded = await asyncio.to_thread(base64.b64encode, got.content)
    return encoded.decode("ascii")


async def render_images(ex: Exchange, urls: list[str], response_format: str | None) -> bytes:
    """OpenAI's ``ImagesResponse`` of ``urls``: as they are, or fetched as ``b64_json``."""
    if response_format == "b64_json":
        allow = _PRIVATE if ex.gateway.settings.get(PRIVATE_OUTPUTS, "deny") == "allow" else frozenset()
        data: list[dict[str, str]] = [{"b64_json": await _fetch_b64(url, allow)} for url in urls]
    else:
        data = [{"url": url} for url in urls]
    return json_dumps({"created": int(time.time()), "data": data})
