"""The official OpenAI SDK's ``images.generate`` on a Replicate channel: the prediction made
from OpenAI's fields (checked by the fake against the model's inputs), answered at once or
polled, URLs or base64 fetched through the guarded fetcher, billed per image, failures
refunded, and the bounds of what goes up."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
import pytest_asyncio

from faregate.testing.harness import AdminClient
from faregate.testing.logs import consume_logs
from faregate_adapter_replicate.provider import REPLICATE_CHANNEL_TYPE
from faregate_adapter_replicate.testing import FLUX_PRO, FLUX_SCHNELL, PNG, FakeReplicate
from faregate_adapter_replicate.testing.fixtures import FAKE_REPLICATE_KEY

PRICE = 0.04  # ModelPrice: dollars an image
QUOTA_PER_IMAGE = round(PRICE * 500_000)


class Setup:
    def __init__(self, server: Any, admin: AdminClient, fake: FakeReplicate, client: openai.AsyncOpenAI) -> None:
        self.server, self.admin, self.fake, self.client = server, admin, fake, client

    async def consume_logs(self) -> list[Any]:
        return await consume_logs(self.server)


async def deploy(make_gateway: Any, fake: FakeReplicate, settings: dict[str, Any] | None = None) -> Setup:
    server = await make_gateway(plugins=["faregate-adapter-openai", "faregate-adapter-replicate"], settings=settings)
    admin = AdminClient(server.base_url)
    await admin.setup_root()
    await admin.set_option("ModelPrice", {FLUX_PRO: PRICE, FLUX_SCHNELL: PRICE, "flux": PRICE})
    await admin.add_channel(type=REPLICATE_CHANNEL_TYPE, base_url=fake.base_url, key=FAKE_REPLICATE_KEY,
                            models=f"{FLUX_PRO},{FLUX_SCHNELL},flux", name="replicate",
                            model_mapping=json.dumps({"flux": FLUX_SCHNELL}))
    key = await admin.add_token(remain_quota=5_000_000)
    return Setup(server, admin, fake, openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key=key,
                                                         max_retries=0))


@pytest_asyncio.fixture
async def setup(make_gateway: Any, fake_replicate: FakeReplicate) -> AsyncIterator[Setup]:
    deployed = await deploy(make_gateway, fake_replicate)
    yield deployed
    await deployed.client.close()
    await deployed.admin.close()


async def test_a_prediction_done_at_once_answers_urls_billed_per_image(setup: Setup) -> None:
    result = await setup.client.images.generate(model=FLUX_PRO, prompt="a red fox in snow", size="1792x1024",
                                                quality="hd", output_format="jpeg",
                                                extra_body={"safety_tolerance": 2})
    (sent,) = setup.fake.requests
    assert sent["path"] == f"/v1/models/{FLUX_PRO}/predictions"
    assert sent["headers"]["prefer"] == "wait" and sent["headers"]["authorization"] == f"Bearer {FAKE_REPLICATE_KEY}"
    assert sent["json"] == {"input": {"prompt": "a red fox in snow", "aspect_ratio": "16:9", "output_format": "jpg",
                                      "prompt_upsampling": True, "safety_tolerance": 2}}
    (prediction,) = setup.fake.predictions
    assert result.data is not None and [d.url for d in result.data] == [
        f"{setup.fake.base_url}/files/{prediction}-0.jpg"]
    assert result.created > 0
    (row,) = await setup.consume_logs()
    assert row.model_name == FLUX_PRO and row.quota == QUOTA_PER_IMAGE


async def test_a_running_prediction_is_polled_and_its_images_counted(setup: Setup) -> None:
    setup.fake.polls_needed = 2
    result = await setup.client.images.generate(model="flux", prompt="three cats", n=3, size="1000x1000")
    create, *polls = setup.fake.requests
    assert create["json"] == {"input": {"prompt": "three cats", "aspect_ratio": "1:1", "num_outputs": 3}}
    (prediction,) = setup.fake.predictions
    assert [p["path"] for p in polls] == [f"/v1/predictions/{prediction}"] * 2
    assert all(p["method"] == "GET" and p["headers"]["authorization"] == f"Bearer {FAKE_REPLICATE_KEY}"
               for p in polls)
    assert result.data is not None and len(result.data) == 3
    (row,) = await setup.consume_logs()
    assert row.model_name == "flux" and row.quota == 3 * QUOTA_PER_IMAGE
    assert json.loads(row.other)["other_ratios"]["n"] == 3


async def test_b64_json_from_a_private_address_is_refused_by_default(setup: Setup) -> None:
    # the fake serves its files on loopback: refused, as any private address, unless allowed
    with pytest.raises(openai.APIStatusError) as caught:
        await setup.client.images.generate(model=FLUX_PRO, prompt="a boat", response_format="b64_json")
    assert caught.value.status_code == 502 and "loopback" in caught.value.message
    assert await setup.consume_logs() == []  # nothing delivered, nothing billed


async def test_b64_json_fetches_the_images_through_the_guarded_fetcher(make_gateway: Any,
                                                                       fake_replicate: FakeReplicate) -> None:
    allowed = await deploy(make_gateway, fake_replicate, settings={"openai_image_output_private_addresses": "allow"})
    try:
        result = await allowed.client.images.generate(model=FLUX_PRO, prompt="a boat", response_format="b64_json")
        assert result.data is not None and base64.b64decode(result.data[0].b64_json or "") == PNG
        assert result.data[0].url is None
        (row,) = await allowed.consume_logs()
        assert row.quota == QUOTA_PER_IMAGE
    finally:
        await allowed.client.close()
        await allowed.admin.close()


async def test_a_failed_prediction_is_an_error_and_costs_nothing(setup: Setup) -> None:
    setup.fake.fail_with = f"NSFW content detected (key {FAKE_REPLICATE_KEY})"
    with pytest.raises(openai.APIStatusError) as caught:
        await setup.client.images.generate(model=FLUX_PRO, prompt="something")
    assert caught.value.status_code == 502 and "NSFW content detected" in caught.value.message
    assert FAKE_REPLICATE_KEY not in caught.value.message
    assert await setup.consume_logs() == []


async def test_inputs_replicate_refuses_reach_the_client_as_its_422(setup: Setup) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        await setup.client.images.generate(model=FLUX_PRO, prompt="x", extra_body={"safety_tolerance": 9})
    assert "safety_tolerance" in caught.value.message
    assert await setup.consume_logs() == []


@pytest.mark.parametrize(("model", "extra", "param"), [
    ("not-a-replicate-model", {}, "model"),
    (FLUX_PRO, {"input": ["no"]}, "input"),
    (FLUX_PRO, {"stream": True}, "stream"),
])
async def test_what_replicate_cannot_take_is_a_400_before_any_call(setup: Setup, model: str, extra: dict[str, Any],
                                                                   param: str) -> None:
    await setup.admin.set_option("ModelPrice", {FLUX_PRO: PRICE, "not-a-replicate-model": PRICE})
    await setup.admin.add_channel(type=REPLICATE_CHANNEL_TYPE, base_url=setup.fake.base_url, key=FAKE_REPLICATE_KEY,
                                  models="not-a-replicate-model", name="unmapped")
    with pytest.raises(openai.BadRequestError) as caught:
        await setup.client.images.generate(model=model, prompt="x", extra_body=extra)
    assert caught.value.body["param"] == param  # type: ignore[index]
    assert setup.fake.requests == []


async def test_polls_answered_5xx_are_polled_again_others_end_the_request(setup: Setup) -> None:
    setup.fake.polls_needed = 1
    setup.fake.poll_errors = [503, 502]
    result = await setup.client.images.generate(model=FLUX_PRO, prompt="patience")
    assert result.data is not None and len(result.data) == 1
    assert len(setup.fake.requests) == 4  # the creation, two failed polls, the one that found it done
    setup.fake.poll_errors = [404]
    with pytest.raises(openai.NotFoundError):
        await setup.client.images.generate(model=FLUX_PRO, prompt="gone")
    (row,) = await setup.consume_logs()  # the first only
    assert row.quota == QUOTA_PER_IMAGE


async def test_a_prediction_that_never_finishes_is_a_504(setup: Setup, monkeypatch: pytest.MonkeyPatch) -> None:
    from faregate_adapter_openai import image_jobs

    monkeypatch.setattr(image_jobs, "MAX_POLLS", 2)
    setup.fake.polls_needed = 10
    with pytest.raises(openai.APIStatusError) as caught:
        await setup.client.images.generate(model=FLUX_PRO, prompt="forever")
    assert caught.value.status_code == 504
    assert len(setup.fake.requests) == 3 and await setup.consume_logs() == []


async def test_chat_is_never_sent_to_a_replicate_channel(setup: Setup) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await setup.client.chat.completions.create(model=FLUX_PRO, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "endpoint_not_supported"
    assert setup.fake.requests == []


async def test_the_channel_test_makes_one_prediction(setup: Setup) -> None:
    """A Replicate channel has no chat: its test (``GET /api/channel/test/{id}``, no
    endpoint_type) is one image generation, as a prediction; a prediction still running is
    an accepted request (no poll); a failed one fails the test with its words, the key
    redacted; chat is refused by name."""
    (channel,) = (await setup.admin.ok("GET", "/api/channel/search", params={"keyword": "replicate"}))["items"]

    async def probe(**params: str) -> dict[str, Any]:
        answer: dict[str, Any] = await setup.admin.call("GET", f"/api/channel/test/{channel['id']}", params=params)
        return answer

    answer = await probe()
    assert answer["success"] is True, answer
    (sent,) = setup.fake.requests
    assert sent["path"] == f"/v1/models/{FLUX_PRO}/predictions" and sent["json"]["input"]["prompt"]
    setup.fake.polls_needed = 3
    assert (await probe(model="flux", endpoint_type="image-generation"))["success"] is True
    assert len(setup.fake.requests) == 2 and setup.fake.requests[-1]["path"] == f"/v1/models/{FLUX_SCHNELL}/predictions"
    setup.fake.polls_needed = 0
    setup.fake.fail_with = f"NSFW content detected (key {FAKE_REPLICATE_KEY})"
    failed = await probe()
    assert failed["success"] is False and "NSFW content detected" in failed["message"]
    assert FAKE_REPLICATE_KEY not in failed["message"]
    refused = await probe(endpoint_type="openai")
    assert refused["success"] is False and "does not serve the chat endpoint" in refused["message"]
    assert len(setup.fake.requests) == 3
