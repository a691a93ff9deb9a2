"""OpenAI's image endpoints through the gateway, as new-api serves them:

* ``POST /v1/images/generations`` (JSON; no model: new-api's ``dall-e``), endpoint kind
  ``images``;
* ``POST /v1/images/edits`` (multipart with image files and an optional mask, or JSON
  with images by URL or file id) and new-api's reserved ``POST /v1/edits`` (the same
  driver), endpoint kind ``image_edits``.

A form goes upstream as the client sent it (its bytes and content type) unless the
channel maps the model, then re-encoded with the upstream's name; a JSON body goes up as
checked (re-encoded, so a duplicated key cannot mean one thing here and another there).
The answer comes back unchanged: an ``ImagesResponse``, or with ``stream`` the upstream's
``image_generation.*`` / ``image_edit.*`` events. A provider of another plugin whose image
API is a job (Replicate's predictions) serves generations through
:class:`~faregate_adapter_openai.image_jobs.ImageJobProvider`: its job is polled and its
images answered in the same ``ImagesResponse`` shape (:mod:`.image_jobs`).

Billing (new-api's): a per-call price (``ModelPrice``) times the other ratios ``n``,
``size`` and ``quality``, reserved for the images asked and charged for the images
returned (at most those asked); a token price on the upstream's reported usage (image
input tokens at ``ImageRatio``), reserved on OpenAI's token count of the images asked.
Without reported usage a token-priced answer is billed on an estimate that cannot
exceed the real cost (the prompt, and the cheapest count of the images returned)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from faregate.api import (
    AttemptFailed,
    Exchange,
    Form,
    GatewayError,
    Outcome,
    Provider,
    Route,
    UpstreamRequest,
    UpstreamTarget,
    Usage,
    bad_request,
    is_multipart,
    stream_outcome,
)
from faregate_adapter_openai import image_jobs, image_requests
from faregate_adapter_openai.image_answers import ImageEventStream, read_answer
from faregate_adapter_openai.image_jobs import ImageJobProvider
from faregate_adapter_openai.image_requests import ImageAsk

GENERATIONS = "images"
EDITS = "image_edits"
#: a generation is small JSON: a prompt of at most 32,000 characters and a few options
GENERATION_MAX_BODY_MB = 1.0
#: an edit carries images: one at OpenAI's per-image limit (50 MB, gpt-image models) with a
#: mask (4 MB) and the form's fields fits; several images share the cap
EDIT_MAX_BODY_MB = 64.0
ROUTES = [
    Route("POST", "/v1/images/generations", kind=GENERATIONS, max_body_mb=GENERATION_MAX_BODY_MB),
    Route("POST", "/v1/images/edits", kind=EDITS, max_body_mb=EDIT_MAX_BODY_MB),
    # new-api's reserved compatibility path: image editing too
    Route("POST", "/v1/edits", kind=EDITS, max_body_mb=EDIT_MAX_BODY_MB),
]
#: where an exchange keeps its checked request and its uploaded form (``Exchange.extra``)
ASK_KEY = "openai.images.ask"
FORM_KEY = "openai.images.form"
#: the attempt's target, for a job's polls (``Exchange.extra``)
TARGET_KEY = "openai.images.target"


@runtime_checkable
class ImageEndpointProvider(Protocol):
    """What a provider offers to serve the image endpoints (besides declaring them in
    ``endpoints``): JSON and multipart requests to an endpoint's upstream path."""

    def build_json(self, endpoint: str, body: dict[str, Any], raw: bytes, target: UpstreamTarget) -> UpstreamRequest:
        ...

    def build_form(self, endpoint: str, payload: bytes, content_type: str, target: UpstreamTarget) -> UpstreamRequest:
        ...


@dataclass(slots=True, frozen=True)
class Upload:
    """A multipart edit as received: the parsed form and the client's content type."""

    form: Form
    content_type: str


class ImageOperation:
    """One attempt of an image endpoint: the checked request up, the answer down."""

    #: a job's creation may answer 201 Created (Replicate) or 202 Accepted; an image answer is checked anyway
    success_statuses = (200, 201, 202)

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    def serves(self, provider: Provider, channel_type: int) -> bool:
        if not provider.serves(self.endpoint, channel_type):
            return False
        return isinstance(provider, ImageEndpointProvider) or (
            self.endpoint == GENERATIONS and isinstance(provider, ImageJobProvider))

    def build(self, ex: Exchange, provider: Provider, target: UpstreamTarget, passthrough: bool) -> UpstreamRequest:
        if not isinstance(provider, ImageEndpointProvider):
            assert isinstance(provider, ImageJobProvider)
            if ex.summary is not None and ex.summary.stream:
                raise bad_request(f"a {provider_name(provider)} channel does not stream images", param="stream")
            ex.extra[TARGET_KEY] = target
            return provider.build_generation({**ex.body, "model": target.model}, target)
        upload = ex.extra.get(FORM_KEY)
        if not isinstance(upload, Upload):
            return provider.build_json(self.endpoint, {**ex.body, "model": target.model}, b"", target)
        if upload.form.fields.get("model") == target.model:
            return provider.build_form(self.endpoint, ex.raw, upload.content_type, target)
        payload, content_type = upload.form.with_field("model", target.model).encode()
        return provider.build_form(self.endpoint, payload, content_type, target)

    async def finish(self, ex: Exchange, provider: Provider, resp: Any, passthrough: bool) -> Outcome:
        ask = ex.extra[ASK_KEY]
        assert isinstance(ask, ImageAsk)
        per_call = ex.price is not None and ex.price.model_price is not None
        if ask.stream:
            events = ImageEventStream(ask.n, ask.other_ratios() if per_call else None)
            return await stream_outcome(ex, provider, resp, True, events)
        try:
            body = await resp.aread()
        except Exception:  # noqa: BLE001 - the transport's own error types
            raise AttemptFailed(GatewayError(502, "upstream closed the connection mid-response",
                                             code="read_response_body_failed", upstream=True)) from None
        finally:
            await resp.aclose()
        ex.upstream_seconds += time.perf_counter() - ex.answer_at
        ex.answer_at = 0.0
        if isinstance(provider, ImageJobProvider) and not isinstance(provider, ImageEndpointProvider):
            body, images = await self._job(ex, provider, body, ask)
            usage = None
        else:
            images, usage = read_answer(body)
        images = min(images, ask.n)  # never more than were asked (and reserved)
        estimated = usage is None
        if usage is None:  # none reported: what is certain of what came back
            assert ex.summary is not None
            usage = Usage(input_tokens=max(1, ex.summary.prompt_tokens),
                          output_tokens=images * ask.output_tokens(upper=False))
        # per call: the images returned; by token: the usage alone, which covers them all
        ratios = {**ask.other_ratios(), "n": float(images)} if per_call else {}
        ex.settle(usage, end_reason="done", estimated=estimated, other_ratios=ratios)
        return ex.raw_json(body)

    @staticmethod
    async def _job(ex: Exchange, provider: ImageJobProvider, body: bytes, ask: ImageAsk) -> tuple[bytes, int]:
        """A job's images (polled until done) as an ``ImagesResponse``, and how many."""
        target = ex.extra[TARGET_KEY]
        try:
            first = image_jobs.read(provider, body, target)
        except GatewayError as err:
            if err.code == "bad_response_body":  # not a job: another channel may answer
                raise AttemptFailed(err) from None
            raise image_jobs.scrub(err, ex.secrets) from None
        urls = (await image_jobs.wait_for_images(ex, provider, target, first))[:ask.n]
        response_format = ex.body.get("response_format")
        return await image_jobs.render_images(ex, urls, response_format), len(urls)


def provider_name(provider: object) -> str:
    return str(getattr(provider, "name", "job")).capitalize()


class ImageDriver:
    """Routes of one image kind: authenticate, read (JSON, or a form for edits), check,
    admit, relay."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.operation = ImageOperation(kind)

    async def handle(self, ex: Exchange) -> Outcome:
        await ex.authenticate()
        content_type = ex.headers.get("content-type")
        if self.kind == EDITS and is_multipart(content_type):
            assert content_type is not None
            form = await ex.read_form()
            ask = image_requests.form_edit(form)
            ex.extra[FORM_KEY] = Upload(form, content_type)
            body: dict[str, Any] = dict(form.fields)
            raw = ex.raw
        elif self.kind == EDITS and not _is_json(content_type):
            raise bad_request("request body must be multipart/form-data or application/json",
                              code="bad_request_body")
        else:
            raw, body = await ex.read_json()
            ask = image_requests.generation(body) if self.kind == GENERATIONS else image_requests.json_edit(body)
        ex.extra[ASK_KEY] = ask
        ex.check_prompt(ask.prompt)  # the sensitive-word check (the summary counts no text of its own)
        ex.begin(ask.summary(), body, raw)
        await ex.admit(self.operation)
        return await ex.relay(self.operation)


def _is_json(content_type: str | None) -> bool:
    """A JSON body (or none declared, as clients of the JSON endpoints often send)."""
    media = (content_type or "application/json").split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def drivers() -> list[ImageDriver]:
    return [ImageDriver(GENERATIONS), ImageDriver(EDITS)]
