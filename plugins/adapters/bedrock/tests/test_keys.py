"""new-api's Bedrock key formats, read and checked: ``AK|SK|region`` and ``APIKEY|region``
(or the region in ``other``), the setting ``aws_key_type``; a bad key is a 400 naming the
field when the channel is saved (never stored, never quoted back), and the model names a
client may use map onto Bedrock ids and inference profiles."""

from __future__ import annotations

import pytest

from faregate.testing.harness import AdminClient, GatewayServer
from faregate_adapter_bedrock.keys import AwsKey, KeyProblem, parse_key
from faregate_adapter_bedrock.model_ids import bedrock_model_id, is_anthropic
from faregate_adapter_bedrock.testing import ACCESS_KEY, API_KEY, SECRET_KEY

LONG_KEY = "ABSK" + "Q" * 120


@pytest.mark.parametrize(("key", "other", "settings", "expected"), [
    (f"{ACCESS_KEY}|{SECRET_KEY}|us-west-2", "", {}, AwsKey("us-west-2", ACCESS_KEY, SECRET_KEY)),
    (f"{ACCESS_KEY}|{SECRET_KEY}", "eu-central-1", {}, AwsKey("eu-central-1", ACCESS_KEY, SECRET_KEY)),
    (f" {ACCESS_KEY} | {SECRET_KEY} | ap-southeast-2 ", "", {}, AwsKey("ap-southeast-2", ACCESS_KEY, SECRET_KEY)),
    (f"{API_KEY}|us-east-1", "", {}, AwsKey("us-east-1", api_key=API_KEY)),
    (LONG_KEY, "us-gov-west-1", {}, AwsKey("us-gov-west-1", api_key=LONG_KEY)),
    (f"{API_KEY}|us-east-1", "eu-west-1", {"aws_key_type": "api_key"}, AwsKey("us-east-1", api_key=API_KEY)),
    (f"{ACCESS_KEY}|{SECRET_KEY}", "us-east-1", {"aws_key_type": "ak_sk"}, AwsKey("us-east-1", ACCESS_KEY,
                                                                                   SECRET_KEY)),
])
def test_key_formats(key: str, other: str, settings: dict[str, str], expected: AwsKey) -> None:
    assert parse_key(key, other, settings) == expected


@pytest.mark.parametrize(("key", "other", "settings", "problem"), [
    (f"{ACCESS_KEY}|{SECRET_KEY}", "", {}, "no region"),
    (f"{ACCESS_KEY}|{SECRET_KEY}|us-east-1.evil.example", "", {}, "not an AWS region"),
    (f"{ACCESS_KEY}|{SECRET_KEY}", "evil.example/x?", {}, "other must be an AWS region"),
    (f"lower{ACCESS_KEY}|{SECRET_KEY}|us-east-1", "", {}, "access key id"),
    (f"{ACCESS_KEY}|short|us-east-1", "", {}, "secret access key"),
    (f"{ACCESS_KEY}|{SECRET_KEY}|us-east-1|extra", "", {}, "written"),
    ("has spaces in it but long enough", "us-east-1", {}, "API key"),
    (API_KEY, "us-east-1", {"aws_key_type": "ak_sk"}, "written AK|SK|region"),
    (f"{ACCESS_KEY}|{SECRET_KEY}|us-east-1", "", {"aws_key_type": "api_key"}, "written APIKEY|region"),
    (API_KEY, "us-east-1", {"aws_key_type": "iam"}, "aws_key_type"),
])
def test_bad_keys_are_named_never_quoted(key: str, other: str, settings: dict[str, str], problem: str) -> None:
    with pytest.raises(KeyProblem) as caught:
        parse_key(key, other, settings)
    assert problem in str(caught.value)
    for part in key.split("|"):
        assert part.strip() not in str(caught.value) or len(part.strip()) < 6


async def test_a_bad_key_is_refused_when_the_channel_is_saved(gateway: GatewayServer, admin: AdminClient) -> None:
    base = {"type": 33, "name": "aws", "base_url": "", "models": "claude-sonnet-4-5", "group": "default"}
    refused = await admin.call("POST", "/api/channel/", json={"mode": "single", "channel": {
        **base, "key": f"{ACCESS_KEY}|{SECRET_KEY}"}})
    assert refused["success"] is False and refused["message"].startswith("key: no region")
    assert SECRET_KEY not in refused["message"]
    batch = await admin.call("POST", "/api/channel/", json={"mode": "batch", "channel": {
        **base, "key": f"{API_KEY}|us-east-1\n{ACCESS_KEY}|{SECRET_KEY}|nowhere"}})
    assert batch["success"] is False and batch["message"].startswith("key (key 2 of 2):")
    assert (await admin.ok("GET", "/api/channel/"))["total"] == 0  # nothing stored
    made = await admin.ok("POST", "/api/channel/", json={"mode": "single", "channel": {
        **base, "key": f"{ACCESS_KEY}|{SECRET_KEY}", "other": "us-east-1"}})
    # the region cannot be taken away from a key that needs it, nor the key type contradicted
    cleared = await admin.call("PUT", "/api/channel/", json={"id": made, "other": ""})
    assert cleared["success"] is False and "no region" in cleared["message"]
    contradicted = await admin.call("PUT", "/api/channel/", json={"id": made,
                                                                  "settings": '{"aws_key_type": "api_key"}'})
    assert contradicted["success"] is False and contradicted["message"].startswith("key:")
    renamed = await admin.call("PUT", "/api/channel/", json={"id": made, "name": "renamed"})
    assert renamed["success"] is True


@pytest.mark.parametrize(("name", "region", "expected"), [
    ("claude-sonnet-4-5", "us-east-1", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("claude-sonnet-4-5-20250929", "eu-west-3", "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"),
    ("claude-3-5-haiku-latest", "ap-northeast-1", "anthropic.claude-3-5-haiku-20241022-v1:0"),  # no APAC profile
    ("claude-opus-4-1", "ap-south-1", "anthropic.claude-opus-4-1-20250805-v1:0"),
    ("nova-pro-v1:0", "ap-southeast-2", "apac.amazon.nova-pro-v1:0"),
    ("us.anthropic.claude-opus-4-20250514-v1:0", "us-west-2", "us.anthropic.claude-opus-4-20250514-v1:0"),
    ("meta.llama3-1-70b-instruct-v1:0", "us-east-1", "meta.llama3-1-70b-instruct-v1:0"),
])
def test_model_names_map_onto_bedrock_ids(name: str, region: str, expected: str) -> None:
    assert bedrock_model_id(name, region) == expected


def test_claude_models_are_told_apart() -> None:
    assert is_anthropic("claude-haiku-4-5") and is_anthropic("eu.anthropic.claude-3-7-sonnet-20250219-v1:0")
    assert not is_anthropic("amazon.nova-lite-v1:0") and not is_anthropic("mistral.mistral-large-2407-v1:0")
    assert not is_anthropic("arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3")
