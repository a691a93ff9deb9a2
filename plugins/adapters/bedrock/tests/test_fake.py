"""The fake Bedrock is what AWS is to AWS's own SDK: botocore's clients (``bedrock-runtime``
and ``bedrock``, from botocore's own service models, signing with SigV4 or a Bedrock API
key) call it and parse its answers, its event streams included, with AWS's own parsers; it
refuses what AWS refuses (a signature made with another secret, a tampered body, another
region, a stale date, an unknown API key, a body outside the schemas); and the core's
event-stream splitter reads its frames, refusing a corrupted one."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import ClientError
from botocore.session import get_session

from faregate.api import Framing, FramingError, splitter_for
from faregate_adapter_bedrock.keys import AwsKey
from faregate_adapter_bedrock.signing import auth_headers, wire_url
from faregate_adapter_bedrock.testing import (
    ACCESS_KEY,
    API_KEY,
    REGION,
    REPLY_PREFIX,
    SECRET_KEY,
    FakeBedrock,
    eventstream,
)

CLAUDE_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "amazon.nova-pro-v1:0"


def client(fake: FakeBedrock, service: str = "bedrock-runtime", *, secret: str = SECRET_KEY) -> Any:
    return get_session().create_client(service, region_name=REGION, endpoint_url=fake.base_url,
                                       aws_access_key_id=ACCESS_KEY, aws_secret_access_key=secret,
                                       config=Config(retries={"max_attempts": 1}))


async def test_botocore_converse_and_its_stream(fake_bedrock: FakeBedrock) -> None:
    runtime = client(fake_bedrock)
    messages = [{"role": "user", "content": [{"text": "hello from botocore"}]}]
    answer = await asyncio.to_thread(runtime.converse, modelId=NOVA, messages=messages,
                                     inferenceConfig={"maxTokens": 64})
    assert answer["output"]["message"]["content"] == [{"text": REPLY_PREFIX + "hello from botocore"}]
    assert answer["stopReason"] == "end_turn" and answer["usage"]["outputTokens"] > 0

    def stream() -> list[dict[str, Any]]:
        return list(runtime.converse_stream(modelId=NOVA, messages=messages)["stream"])

    events = await asyncio.to_thread(stream)
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    text = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert text == REPLY_PREFIX + "hello from botocore"
    assert events[-1]["metadata"]["usage"]["inputTokens"] > 0
    # botocore put the model id in the path as %3A: the fake checked the signature over it
    assert fake_bedrock.requests[0]["path"] == f"/model/{NOVA.replace(':', '%3A')}/converse"


async def test_botocore_invoke_model_and_its_stream(fake_bedrock: FakeBedrock) -> None:
    runtime = client(fake_bedrock)
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
                       "messages": [{"role": "user", "content": "hi claude"}]})
    answer = await asyncio.to_thread(runtime.invoke_model, modelId=CLAUDE_ID, body=body)
    message = json.loads(answer["body"].read())
    assert message["type"] == "message" and message["content"][0]["text"].endswith("hi claude")

    def stream() -> list[dict[str, Any]]:
        return list(runtime.invoke_model_with_response_stream(modelId=CLAUDE_ID, body=body)["body"])

    events = [json.loads(e["chunk"]["bytes"]) for e in await asyncio.to_thread(stream)]
    assert [e["type"] for e in events][0] == "message_start" and events[-1]["type"] == "message_stop"
    assert events[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] > 0
    with pytest.raises(ClientError) as refused:  # newer Claude models only through an inference profile
        await asyncio.to_thread(runtime.invoke_model, modelId=CLAUDE_ID.removeprefix("us."), body=body)
    assert refused.value.response["Error"]["Code"] == "ValidationException"


async def test_botocore_lists_the_foundation_models(fake_bedrock: FakeBedrock) -> None:
    control = client(fake_bedrock, "bedrock")
    found = await asyncio.to_thread(control.list_foundation_models, byOutputModality="TEXT")
    assert NOVA in [m["modelId"] for m in found["modelSummaries"]]


async def test_a_signature_made_with_another_secret_is_refused(fake_bedrock: FakeBedrock) -> None:
    runtime = client(fake_bedrock, secret="not" + SECRET_KEY[3:])
    with pytest.raises(ClientError) as refused:
        await asyncio.to_thread(runtime.converse, modelId=NOVA, messages=[{"role": "user", "content": [{"text": "x"}]}])
    assert refused.value.response["Error"]["Code"] == "InvalidSignatureException"
    assert "signature we calculated does not match" in refused.value.response["Error"]["Message"]


def _signed(fake: FakeBedrock, body: bytes, key: AwsKey) -> tuple[str, dict[str, str]]:
    url = wire_url(f"{fake.base_url}/model/{NOVA.replace(':', '%3A')}/converse")
    return url, auth_headers("POST", url, {"Content-Type": "application/json"}, body, key)


@pytest.mark.parametrize("case", ["tampered_body", "other_region", "unknown_access_key", "stale_date", "no_auth",
                                  "wrong_api_key"])
async def test_the_fake_refuses_what_aws_refuses(fake_bedrock: FakeBedrock, case: str) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}).encode()
    key = AwsKey(region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    if case == "other_region":
        key = AwsKey(region="eu-west-1", access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    elif case == "unknown_access_key":
        key = AwsKey(region=REGION, access_key="AKIA" + "Z" * 16, secret_key=SECRET_KEY)
    elif case == "wrong_api_key":
        key = AwsKey(region=REGION, api_key="ABSK" + "y" * 40)
    url, headers = _signed(fake_bedrock, body, key)
    _, right = _signed(fake_bedrock, body, AwsKey(region=REGION, access_key=ACCESS_KEY, secret_key=SECRET_KEY))
    sent = body
    if case == "tampered_body":
        sent = body.replace(b"hi", b"ho")
    elif case == "stale_date":
        headers["X-Amz-Date"] = "20200101T000000Z"
    elif case == "no_auth":
        headers.pop("Authorization")
    async with httpx.AsyncClient() as http:
        answered = await http.post(url, content=body, headers=right)
        refused = await http.post(url, content=sent, headers=headers)
    assert answered.status_code == 200, answered.text  # the same request, signed right, is answered
    assert refused.status_code == 403 and "message" in refused.json()
    assert refused.headers["x-amzn-errortype"].split(":")[0].endswith("Exception")


def _frames(fake: FakeBedrock, path: str, body: dict[str, Any]) -> bytes:
    url = wire_url(f"{fake.base_url}{path}")
    payload = json.dumps(body).encode()
    headers = auth_headers("POST", url, {"Content-Type": "application/json"}, payload,
                           AwsKey(region=REGION, api_key=API_KEY))
    response = httpx.post(url, content=payload, headers=headers)
    assert response.status_code == 200 and response.headers["content-type"] == "application/vnd.amazon.eventstream"
    return response.content


def _split(data: bytes, size: int) -> Iterator[tuple[bytes, str | None, bytes]]:
    splitter = splitter_for(Framing.AWS_EVENT_STREAM)
    for i in range(0, len(data), size):
        yield from splitter.feed(data[i:i + size])


async def test_the_core_splitter_reads_the_fakes_frames_and_refuses_corrupted_ones(fake_bedrock: FakeBedrock) -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
            "messages": [{"role": "user", "content": "frames"}]}
    data = await asyncio.to_thread(_frames, fake_bedrock, f"/model/{CLAUDE_ID}/invoke-with-response-stream", body)
    for size in (1, 7, len(data)):  # however the bytes arrive
        events = list(_split(data, size))
        assert {name for _, name, _ in events} == {"chunk"}
        decoded = [json.loads(base64.b64decode(json.loads(payload)["bytes"])) for _, _, payload in events]
        assert decoded[-1]["type"] == "message_stop"
    # the core's own decoder (the standard library's) reads what botocore's reads
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    by_botocore = [(m.headers[":event-type"], m.payload) for m in buffer]  # type: ignore[index]
    assert by_botocore == [(name, payload) for _, name, payload in _split(data, len(data))]
    corrupted = bytearray(data)
    corrupted[len(data) // 2] ^= 0xFF
    with pytest.raises(FramingError):
        list(_split(bytes(corrupted), len(data)))


def test_exception_frames_name_their_exception() -> None:
    splitter = splitter_for(Framing.AWS_EVENT_STREAM)
    ((_, name, payload),) = splitter.feed(eventstream.exception("throttlingException", "slow down"))
    assert name == "throttlingException" and json.loads(payload) == {"message": "slow down"}
