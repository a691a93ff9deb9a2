"""Authenticating a Bedrock call: SigV4 with botocore's own signer for an access key, a
bearer token for a Bedrock API key. What is signed is the URL exactly as the core's HTTP
client (aiohttp, through yarl) sends it: yarl decodes percent-escapes a path may carry
unescaped (a model id's ``:``), and AWS checks the signature against the path it received.
Signing is a few HMACs: cheap enough for every attempt."""

from __future__ import annotations

from yarl import URL

from faregate_adapter_bedrock.keys import AwsKey
from faregate_adapter_bedrock.names import SIGNING_NAME


def wire_url(url: str) -> str:
    """``url`` as the core's client puts it on the wire."""
    return str(URL(url))


def auth_headers(method: str, url: str, headers: dict[str, str], body: bytes | None, key: AwsKey) -> dict[str, str]:
    """``headers`` plus what authenticates the call (``Authorization``, ``X-Amz-Date``);
    ``url`` must be the wire form (:func:`wire_url`)."""
    if not key.sigv4:
        return {**headers, "Authorization": f"Bearer {key.api_key}"}
    # botocore is imported on first use: a gateway with no Bedrock channel never loads it
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(method=method, url=url, data=body or b"", headers=headers)
    SigV4Auth(Credentials(key.access_key, key.secret_key), SIGNING_NAME, key.region).add_auth(request)
    return {name: str(value) for name, value in request.headers.items()}
