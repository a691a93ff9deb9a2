"""OpenAI's image endpoints through the gateway with the official ``openai`` SDK (strict
response validation): generations (URLs, base64, new-api's default model), edits as
multipart (one image with a mask, several images, the model mapped) and as JSON, new-api's
``/v1/edits``, streamed generation and edits; billing as new-api does it (a per-call
price times n, size and quality; a token price on the reported usage with image input at
ImageRatio), OpenAI-shaped 400s naming the field, body caps, fail-over and refunds,
quota, and the channels that serve images. The fake upstream checks every request it
gets against OpenAI's schema (multipart forms too)."""

from __future__ import annotations

import asyncio
import base64
from typing import Any
from urllib.parse import urlsplit

import h11
import httpx
import openai
import pytest

from faregate import jsonutil
from faregate_adapter_openai.image_answers import ImageEventStream, without_b64
from faregate_adapter_openai.image_requests import ImageAsk
from faregate_adapter_openai.testing import FakeOpenAI, Fault
from faregate_adapter_openai.testing.images import INPUT_IMAGE_TOKENS, TINY_PNG, form_dict
from faregate_adapter_openai.testing.schema import validate, validate_error

QPU = 500_000
GPT_IMAGE = ("gpt-image-1", 2.5, 8.0, 2.0)  # model, ModelRatio, CompletionRatio, ImageRatio (built-in)
MODELS = "dall-e-3,dall-e,gpt-image-1,mapped-image"
PNG = ("in.png", TINY_PNG, "image/png")
WEBP = b"RIFF\x0c\x00\x00\x00WEBPVP8 "  # a WEBP's signature is all the gateway reads


def sdk(gateway: Any, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                              _strict_response_validation=True)


@pytest.fixture
async def key(gateway: Any, admin: Any, fake_openai: FakeOpenAI) -> str:
    await admin.add_channel(base_url=fake_openai.base_url, models=MODELS,
                            model_mapping='{"mapped-image": "gpt-image-1"}')
    # a stored price option is the whole table: the built-in entries used here are named again
    await admin.set_option("ModelPrice", {"dall-e": 0.02, "dall-e-3": 0.04})
    await admin.set_option("ModelRatio", {"mapped-image": 2.5, "gpt-image-1": 2.5})
    return await admin.add_token(remain_quota=50_000_000)


@pytest.fixture
async def client(gateway: Any, key: str) -> Any:
    client = sdk(gateway, key)
    yield client
    await client.close()



def token_quota(usage: dict[str, Any], ratios: tuple[str, float, float, float] = GPT_IMAGE) -> int:
    """new-api's text formula on an image answer's usage: text input, image input at
    ImageRatio, output at CompletionRatio, all times ModelRatio."""
    _, ratio, completion, image_ratio = ratios
    image = usage["input_tokens_details"]["image_tokens"]
    return round((usage["input_tokens"] - image + image * image_ratio + usage["output_tokens"] * completion) * ratio)


def multipart(fields: dict[str, str | list[str]], files: list[tuple[str, tuple[str, bytes, str]]]
              ) -> tuple[bytes, str]:
    """A ``multipart/form-data`` body written out by hand (any fields, files or none) and its type."""
    boundary = "image-test-boundary"
    parts: list[bytes] = []
    for name, values in fields.items():
        for value in values if isinstance(values, list) else [values]:
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
                         .encode())
    for name, (filename, data, content_type) in files:
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                     f"Content-Type: {content_type}\r\n\r\n".encode() + data + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def upstream_form(fake: FakeOpenAI) -> dict[str, Any]:
    """The last request the fake got, a form, as OpenAI reads it (see the fake's ``form_dict``)."""
    sent = fake.requests[-1]
    form = form_dict(sent["body"], sent["headers"]["content-type"])
    assert form is not None
    return form


async def post(gateway: Any, key: str, path: str, content_type: str | None = None, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}", **({"Content-Type": content_type} if content_type else {})}
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        return await http.post(path, headers=headers, **kwargs)


# ---- generations ---------------------------------------------------------------------------
async def test_dall_e_3_url_is_billed_per_call_times_size_and_quality(client: Any, gateway: Any,
                                                                       fake_openai: FakeOpenAI) -> None:
    raw = await client.images.with_raw_response.generate(model="dall-e-3", prompt="a lighthouse at dusk",
                                                         size="1792x1024", quality="hd", response_format="url")
    body = validate("ImagesResponse", raw.http_response.json())
    image = raw.parse().data[0]
    assert image.url == body["data"][0]["url"] and image.url.startswith("https://")
    assert image.revised_prompt == "A picture of a lighthouse at dusk"
    sent = fake_openai.requests[-1]
    assert sent["path"] == "/v1/images/generations"
    assert sent["json"] == {"model": "dall-e-3", "prompt": "a lighthouse at dusk", "size": "1792x1024",
                            "quality": "hd", "response_format": "url"}
    (row,) = await gateway.consume_logs()
    assert row.quota == round(0.04 * QPU * 2 * 1.5)  # new-api: the big size x2, HD at that size x1.5
    other = jsonutil.loads(row.other)
    assert other["model_price"] == 0.04 and other["other_ratios"] == {"n": 1, "size": 2.0, "quality": 1.5}


async def test_gpt_image_b64_is_billed_on_the_reported_usage(client: Any, gateway: Any) -> None:
    raw = await client.images.with_raw_response.generate(model="gpt-image-1", prompt="two red apples on a table",
                                                         n=2, size="1024x1536", quality="low")
    body = validate("ImagesResponse", raw.http_response.json())
    result = raw.parse()
    assert [base64.b64decode(d.b64_json or "") for d in result.data] == [TINY_PNG, TINY_PNG]
    assert result.usage is not None and result.usage.output_tokens == body["usage"]["output_tokens"] > 0
    (row,) = await gateway.consume_logs()
    assert (row.prompt_tokens, row.completion_tokens) == (body["usage"]["input_tokens"],
                                                          body["usage"]["output_tokens"])
    assert row.quota == token_quota(body["usage"])  # the usage covers both images: not times n
    assert jsonutil.loads(row.other)["usage_source"] == "upstream"


async def test_the_sync_client_works_too(gateway: Any, key: str) -> None:
    def generate() -> Any:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                           _strict_response_validation=True) as sync:
            return sync.images.generate(model="dall-e-3", prompt="a quiet harbour", response_format="b64_json")

    result = await asyncio.to_thread(generate)
    assert base64.b64decode(result.data[0].b64_json or "") == TINY_PNG
    (row,) = await gateway.consume_logs()
    assert row.quota == round(0.04 * QPU)


async def test_the_sync_client_edits_too(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    def edit() -> Any:
        with openai.OpenAI(base_url=gateway.base_url + "/v1", api_key=key, max_retries=0,
                           _strict_response_validation=True) as sync:
            return sync.images.edit(model="gpt-image-1", prompt="add a moon", image=PNG,
                                    mask=("mask.png", TINY_PNG, "image/png"))

    result = await asyncio.to_thread(edit)
    assert base64.b64decode(result.data[0].b64_json or "") == TINY_PNG and result.usage is not None
    assert upstream_form(fake_openai)["mask"].startswith("<file mask.png (image/png")
    (row,) = await gateway.consume_logs()
    assert row.quota == token_quota(result.usage.model_dump())


async def test_no_model_is_new_apis_dall_e(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    resp = await post(gateway, key, "/v1/images/generations", json={"prompt": "a small boat", "n": 3,
                                                                    "size": "256x256"})
    assert resp.status_code == 200, resp.text
    validate("ImagesResponse", resp.json())
    assert fake_openai.requests[-1]["json"]["model"] == "dall-e"  # put in the body upstream
    (row,) = await gateway.consume_logs()
    assert row.model_name == "dall-e" and row.quota == round(0.02 * QPU * 3 * 0.4)  # n x new-api's 256 ratio


# ---- edits -----------------------------------------------------------------------------------
async def test_edit_with_one_image_and_a_mask_goes_up_unchanged(gateway: Any, key: str,
                                                                  fake_openai: FakeOpenAI) -> None:
    mask = ("mask.png", TINY_PNG, "image/png")
    sent, content_type = multipart({"model": "gpt-image-1", "prompt": "add a moon", "quality": "high",
                                    "size": "1024x1024"}, [("image", PNG), ("mask", mask)])
    resp = await post(gateway, key, "/v1/images/edits", content=sent, content_type=content_type)
    assert resp.status_code == 200, resp.text
    body = validate("ImagesResponse", resp.json())
    upstream = fake_openai.requests[-1]
    assert upstream["path"] == "/v1/images/edits" and upstream["body"] == sent  # byte for byte
    assert upstream["headers"]["content-type"] == content_type
    assert upstream_form(fake_openai)["mask"].startswith("<file mask.png (image/png")
    (row,) = await gateway.consume_logs()
    assert body["usage"]["input_tokens_details"]["image_tokens"] == INPUT_IMAGE_TOKENS
    assert row.quota == token_quota(body["usage"])  # the image input at ImageRatio 2
    assert jsonutil.loads(row.other)["image_ratio"] == 2.0


async def test_edit_with_several_images_through_the_sdk(client: Any, gateway: Any,
                                                        fake_openai: FakeOpenAI) -> None:
    raw = await client.images.with_raw_response.edit(model="gpt-image-1", prompt="combine them",
                                                     image=[PNG, ("two.webp", WEBP, "image/webp")],
                                                     n=2, size="1536x1024")
    body = validate("ImagesResponse", raw.http_response.json())
    assert len(raw.parse().data) == 2
    got = upstream_form(fake_openai)
    assert len(got["image"]) == 2 and got["n"] == 2  # image[] twice, n typed as OpenAI reads it
    (row,) = await gateway.consume_logs()
    assert body["usage"]["input_tokens_details"]["image_tokens"] == 2 * INPUT_IMAGE_TOKENS
    assert row.quota == token_quota(body["usage"])


async def test_the_channels_mapping_rewrites_a_multipart_model(client: Any, gateway: Any,
                                                               fake_openai: FakeOpenAI) -> None:
    result = await client.images.edit(model="mapped-image", prompt="make it blue", image=PNG,
                                      mask=("m.png", TINY_PNG, "image/png"), output_format="webp")
    assert result.data and result.usage is not None
    got = upstream_form(fake_openai)
    assert got["model"] == "gpt-image-1" and got["prompt"] == "make it blue" and got["output_format"] == "webp"
    assert got["image"].startswith("<file in.png") and got["mask"].startswith("<file m.png")
    (row,) = await gateway.consume_logs()
    other = jsonutil.loads(row.other)
    assert row.model_name == "mapped-image" and other["upstream_model_name"] == "gpt-image-1"


async def test_json_edit_with_images_by_url_and_file_id(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    body = {"model": "gpt-image-1", "prompt": "a watercolour version",
            "images": [{"image_url": "https://example.com/cat.png"}, {"file_id": "file-abc123"}],
            "mask": {"file_id": "file-mask"}, "quality": "medium", "n": 1}
    resp = await post(gateway, key, "/v1/images/edits", json=body)
    assert resp.status_code == 200, resp.text
    answer = validate("ImagesResponse", resp.json())
    assert fake_openai.requests[-1]["json"] == body
    (row,) = await gateway.consume_logs()
    assert row.quota == token_quota(answer["usage"])


async def test_v1_edits_is_image_editing(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    resp = await post(gateway, key, "/v1/edits", data={"model": "gpt-image-1", "prompt": "brighter"},
                      files={"image": PNG})
    assert resp.status_code == 200, resp.text
    validate("ImagesResponse", resp.json())
    assert fake_openai.requests[-1]["path"] == "/v1/images/edits"


# ---- streaming -----------------------------------------------------------------------------
async def test_streamed_generation_passes_the_events_and_bills_the_completed_usage(client: Any,
                                                                                   gateway: Any) -> None:
    stream = await client.images.generate(model="gpt-image-1", prompt="a comet", stream=True, partial_images=2)
    events = [event async for event in stream]
    assert [e.type for e in events] == ["image_generation.partial_image"] * 2 + ["image_generation.completed"]
    for event in events:
        validate("ImageGenStreamEvent", event.model_dump(exclude_unset=True))
    (row,) = await gateway.consume_logs()
    usage = events[-1].usage.model_dump()
    assert row.is_stream and row.completion_tokens == usage["output_tokens"]
    assert row.quota == token_quota(usage)


async def test_streamed_edit(client: Any, gateway: Any) -> None:
    stream = await client.images.edit(model="gpt-image-1", prompt="night", image=PNG, stream=True, partial_images=1)
    events = [event async for event in stream]
    assert [e.type for e in events] == ["image_edit.partial_image", "image_edit.completed"]
    for event in events:
        validate("ImageEditStreamEvent", event.model_dump(exclude_unset=True))
    (row,) = await gateway.consume_logs()
    assert row.quota == token_quota(events[-1].usage.model_dump())


async def test_a_stream_cut_before_its_image_costs_nothing(client: Any, gateway: Any, admin: Any,
                                                            fake_openai: FakeOpenAI) -> None:
    await admin.set_option("ModelPrice", {"gpt-image-1": 0.05})  # per call: charged per image completed
    fake_openai.push_fault(Fault("stream_cut", after_chunks=1))
    stream = await client.images.generate(model="gpt-image-1", prompt="a comet", stream=True, partial_images=2)
    with pytest.raises(openai.APIError):
        async for _ in stream:
            pass
    (row,) = await gateway.consume_logs()
    assert row.quota == 0 and jsonutil.loads(row.other)["other_ratios"]["n"] == 0
    stream = await client.images.generate(model="gpt-image-1", prompt="a comet", stream=True)
    assert [e.type async for e in stream] == ["image_generation.completed"]
    assert (await gateway.consume_logs())[-1].quota == round(0.05 * QPU)


# ---- bad input, caps, quota ----------------------------------------------------------------
GEN = {"model": "dall-e-3", "prompt": "a fox"}
BAD_GENERATIONS = [
    ({**GEN, "prompt": ""}, "prompt"),
    ({"model": "dall-e-3"}, "prompt"),
    ({**GEN, "prompt": "x" * 4001}, "prompt"),  # dall-e-3's limit
    ({**GEN, "model": "gpt-image-1", "n": 11}, "n"),
    ({**GEN, "model": "gpt-image-1", "n": 0}, "n"),
    ({**GEN, "n": 2}, "n"),  # dall-e-3 makes one image per call
    ({**GEN, "n": "1"}, "n"),
    ({**GEN, "size": "512x512"}, "size"),  # not a dall-e-3 size
    ({**GEN, "size": "1024×1024"}, "size"),
    ({**GEN, "model": "my-model", "size": "huge"}, "size"),
    ({**GEN, "quality": "low"}, "quality"),
    ({**GEN, "response_format": "png"}, "response_format"),
    ({**GEN, "style": "noir"}, "style"),
    ({**GEN, "model": "gpt-image-1", "output_compression": 101}, "output_compression"),
    ({**GEN, "model": "gpt-image-1", "partial_images": 4}, "partial_images"),
    ({**GEN, "model": "gpt-image-1", "background": "green"}, "background"),
    ({**GEN, "stream": "yes"}, "stream"),
    ({**GEN, "user": 7}, "user"),
    ({**GEN, "model": 3}, "model"),
]
EDIT_FIELDS = {"model": "gpt-image-1", "prompt": "edit it"}
BAD_FORMS: list[tuple[dict[str, Any], list[Any], str]] = [
    (EDIT_FIELDS, [], "image"),  # no image (and no file at all)
    ({**EDIT_FIELDS, "image": "https://example.com/a.png"}, [], "image"),  # a text field is no file
    (EDIT_FIELDS, [("image", ("notes.txt", b"hello", "text/plain"))], "image"),
    (EDIT_FIELDS, [("image", PNG), ("mask", ("m.jpg", b"\xff\xd8\xff\xe0", "image/jpeg"))], "mask"),
    (EDIT_FIELDS, [("image", PNG), ("mask", PNG), ("mask", PNG)], "mask"),
    ({**EDIT_FIELDS, "n": "two"}, [("image", PNG)], "n"),
    ({**EDIT_FIELDS, "n": ["1", "10"]}, [("image", PNG)], "n"),  # twice: we and the upstream could differ
    ({**EDIT_FIELDS, "stream": "1"}, [("image", PNG)], "stream"),
    ({"prompt": "edit it"}, [("image", PNG)], "model"),
    ({**EDIT_FIELDS, "prompt": ""}, [("image", PNG)], "prompt"),
    ({**EDIT_FIELDS, "size": "1792x1024"}, [("image", PNG)], "size"),
    ({**EDIT_FIELDS, "input_fidelity": "max"}, [("image", PNG)], "input_fidelity"),
    ({**EDIT_FIELDS, "model": "dall-e-2"}, [("image", PNG), ("image", PNG)], "image"),
    ({**EDIT_FIELDS, "model": "dall-e-2"}, [("image", ("in.webp", WEBP, "image/webp"))], "image"),
    (EDIT_FIELDS, [("image[]", PNG)] * 17, "image"),
    (EDIT_FIELDS, [("image", PNG), ("prompt", ("p.txt", b"a prompt", "text/plain"))], "prompt"),
]
BAD_EDIT_BODIES: list[tuple[bytes, str, str | None]] = [
    (b"model=gpt-image-1&prompt=x", "application/x-www-form-urlencoded", None),  # neither form nor JSON
    (b"not json", "application/json", None),
    (b'{"model": "gpt-image-1", "prompt": "x"}', "application/json", "images"),
    (b'{"model": "gpt-image-1", "prompt": "x", "images": []}', "application/json", "images"),
    (b'{"model": "gpt-image-1", "prompt": "x", "images": [{"image_url": "file:///etc/passwd"}]}',
     "application/json", "images"),
    (b'{"model": "gpt-image-1", "prompt": "x", "images": [{"image_url": "https://a/b", "file_id": "f"}]}',
     "application/json", "images"),
    (b'{"prompt": "x", "images": [{"file_id": "f"}]}', "application/json", "model"),
    (b'{"model": "gpt-image-1", "prompt": "x", "images": [{"file_id": "f"}], "mask": "m"}', "application/json",
     "mask"),
]


async def test_bad_input_is_a_400_naming_the_field(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    """Every case refused before any upstream call, in OpenAI's error shape."""
    cases: list[tuple[str, dict[str, Any], str | None]] = [
        ("/v1/images/generations", {"json": body}, param) for body, param in BAD_GENERATIONS]
    for fields, files, param in BAD_FORMS:
        content, content_type = multipart(fields, files)
        cases.append(("/v1/images/edits", {"content": content, "content_type": content_type}, param))
    cases += [("/v1/edits", {"content": content, "content_type": content_type}, param)
              for content, content_type, param in BAD_EDIT_BODIES]
    for path, request, param in cases:
        resp = await post(gateway, key, path, **request)
        assert resp.status_code == 400, (path, request, resp.text)
        assert validate_error(resp.json())["error"]["param"] == (param or ""), (path, request, resp.text)
    assert not fake_openai.requests
    assert await gateway.consume_logs() == []


async def unfinished_request(base_url: str, path: str, headers: dict[str, str], sent: bytes) -> tuple[int, Any]:
    """POST the start of a body whose declared length is never reached: only a server that
    answers without reading the body can reply at all."""
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    conn = h11.Connection(h11.CLIENT)
    try:
        writer.write(conn.send(h11.Request(method="POST", target=path, headers=[("Host", url.netloc),
                                                                                 *headers.items()])))
        writer.write(conn.send(h11.Data(data=sent)))
        await writer.drain()
        status, body = 0, b""
        async with asyncio.timeout(15):
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                    return status, jsonutil.loads(body)
    finally:
        writer.close()


async def test_a_body_over_the_routes_cap_is_a_413_before_it_is_read(gateway: Any, key: str) -> None:
    for path, declared_mb in [("/v1/images/edits", 65), ("/v1/edits", 65), ("/v1/images/generations", 2)]:
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "multipart/form-data; boundary=b",
                   "Content-Length": str(declared_mb * 1024 * 1024)}
        status, body = await unfinished_request(gateway.base_url, path, headers, b"--b\r\n")
        assert status == 413 and validate_error(body)["error"]["code"] == "request_too_large", path


async def test_a_form_of_too_many_parts_is_a_400(gateway: Any, key: str, fake_openai: FakeOpenAI) -> None:
    content, content_type = multipart({f"f{i}": "x" for i in range(100)}, [("image", PNG)])
    resp = await post(gateway, key, "/v1/images/edits", content=content, content_type=content_type)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "bad_request_body"
    assert not fake_openai.requests


async def test_no_quota_left_is_a_403_before_any_upstream_call(gateway: Any, admin: Any,
                                                               fake_openai: FakeOpenAI, key: str) -> None:
    poor = sdk(gateway, await admin.add_token(remain_quota=round(0.04 * QPU) - 1, name="poor"))
    try:
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await poor.images.generate(model="dall-e-3", prompt="one image too many")
    finally:
        await poor.close()
    assert refused.value.code == "pre_consume_token_quota_failed"
    assert not fake_openai.requests


# ---- fail-over, refunds, capabilities -------------------------------------------------------
async def test_an_upstream_500_fails_over_to_the_next_channel(gateway: Any, admin: Any) -> None:
    async with FakeOpenAI() as a, FakeOpenAI() as b:
        id_a = await admin.add_channel(base_url=a.base_url, models="gpt-image-1", name="A", priority=10)
        id_b = await admin.add_channel(base_url=b.base_url, models="gpt-image-1", name="B", priority=0)
        await admin.set_option("RetryTimes", 1)
        client = sdk(gateway, await admin.add_token(remain_quota=5_000_000))
        a.push_fault(Fault("status", status=500))
        try:
            result = await client.images.edit(model="gpt-image-1", prompt="fix it", image=PNG)
        finally:
            await client.close()
        assert result.data and len(a.requests) == 1 and len(b.requests) == 1
        assert a.requests[0]["body"] == b.requests[0]["body"]  # the same form to both
        assert not a.violations and not b.violations
    (row,) = await gateway.consume_logs()
    assert row.channel_id == id_b and jsonutil.loads(row.other)["admin_info"]["use_channel"] == [id_a, id_b]


async def test_a_failed_call_is_refunded(gateway: Any, admin: Any, client: Any, fake_openai: FakeOpenAI) -> None:
    fake_openai.push_fault(Fault("status", status=500))
    with pytest.raises(openai.InternalServerError):
        await client.images.generate(model="dall-e-3", prompt="doomed")
    await gateway.gateway.ledger.flush(return_all=True)
    assert await gateway.consume_logs() == []
    (token,) = (await admin.ok("GET", "/api/token/"))["items"]
    assert token["remain_quota"] == 50_000_000 and token["used_quota"] == 0


async def test_a_malformed_200_is_not_billed(gateway: Any, admin: Any, client: Any, fake_openai: FakeOpenAI) -> None:
    fake_openai.push_fault(Fault("malformed_json"))
    with pytest.raises(openai.APIStatusError) as failed:
        await client.images.generate(model="dall-e-3", prompt="garbled")
    assert failed.value.status_code == 502 and failed.value.code == "bad_response_body"
    assert await gateway.consume_logs() == []


async def test_only_channels_that_serve_images_are_chosen(gateway: Any, admin: Any, fake_openai: FakeOpenAI,
                                                         fake_anthropic: Any) -> None:
    await admin.add_channel(base_url=fake_anthropic.base_url, models="claude-sonnet-4-5,gpt-image-1", type=14,
                            name="anthropic", priority=10)
    await admin.add_channel(base_url=fake_openai.base_url, models="grok-2-image,gpt-image-1", type=48, name="xai")
    await admin.add_channel(base_url=fake_openai.base_url, models="flux", type=40, name="siliconflow")
    client = sdk(gateway, await admin.add_token(remain_quota=5_000_000))
    await admin.set_option("ModelRatio", {"grok-2-image": 1, "flux": 1, "gpt-image-1": 2.5,  # the whole table
                                          "claude-sonnet-4-5": 1.5})
    try:
        await client.images.generate(model="gpt-image-1", prompt="x")  # the xAI channel, never Anthropic's
        assert not fake_anthropic.requests
        with pytest.raises(openai.BadRequestError) as anthropic_only:
            await client.images.generate(model="claude-sonnet-4-5", prompt="x")
        assert anthropic_only.value.code == "endpoint_not_supported" and "images" in anthropic_only.value.message
        with pytest.raises(openai.BadRequestError) as no_edits:  # xAI's edits are not OpenAI's form
            await client.images.edit(model="grok-2-image", prompt="x", image=PNG)
        assert no_edits.value.code == "endpoint_not_supported" and "image_edits" in no_edits.value.message
        with pytest.raises(openai.BadRequestError) as siliconflow:  # its image API is not OpenAI's shape
            await client.images.generate(model="flux", prompt="x")
        assert siliconflow.value.code == "endpoint_not_supported"
    finally:
        await client.close()
    assert len(fake_openai.requests) == 1


# ---- the pieces, without a gateway --------------------------------------------------------------
def test_base64_values_are_cut_before_parsing() -> None:
    body = b'{"created": 1, "data": [{"b64_json" : "QUJD+/=="}, {"url": "u"}], "b64_json": 5, "x": "\\"b64_json\\""}'
    assert without_b64(body) == (b'{"created": 1, "data": [{"b64_json" : ""}, {"url": "u"}], "b64_json": 5, '
                                 b'"x": "\\"b64_json\\""}')
    assert without_b64(b'{"b64_json": "a\\u0041"}') == b'{"b64_json": "a\\u0041"}'  # escapes: left whole


def test_new_apis_image_ratios_and_output_bounds() -> None:
    def ask(model: str, size: str | None, quality: str | None, n: int = 1) -> ImageAsk:
        return ImageAsk(model, "p", n, size, quality, False, 0)
    assert ask("dall-e-2", "512x512", None, 3).other_ratios() == {"n": 3.0, "size": 0.45, "quality": 1.0}
    assert ask("dall-e-3", "1024x1024", "hd").other_ratios() == {"n": 1.0, "size": 1.0, "quality": 2.0}
    assert ask("gpt-image-1", "1536x1024", "high").other_ratios() == {"n": 1.0, "size": 1.0, "quality": 1.0}
    assert ask("gpt-image-1", None, None).output_tokens(upper=True) == 6240
    assert ask("gpt-image-1", None, None).output_tokens(upper=False) == 272
    assert ask("gpt-image-1", "1536x1024", "medium").output_tokens(upper=True) == 1568
    assert ask("dall-e-3", None, None).output_tokens(upper=True) == 1584


def test_a_stream_counts_completed_images_per_call() -> None:
    events = ImageEventStream(2, {"n": 2.0, "size": 1.0, "quality": 1.0})
    assert events.feed(None, b'{"type": "image_generation.partial_image", "b64_json": "AAAA"}')
    assert events.other_ratios == {"n": 0.0, "size": 1.0, "quality": 1.0} and not events.done
    usage = b'{"input_tokens": 5, "output_tokens": 10, "input_tokens_details": {"image_tokens": 0}}'
    for _ in range(2):
        assert events.feed(None, b'{"type": "image_generation.completed", "b64_json": "AAAA", "usage": ' + usage + b"}")
    assert events.done and events.other_ratios["n"] == 2.0
    assert events.usage is not None and (events.usage.input_tokens, events.usage.output_tokens) == (10, 20)
    assert not events.feed(None, b'{"error": {"message": "boom"}}') and events.error is not None
