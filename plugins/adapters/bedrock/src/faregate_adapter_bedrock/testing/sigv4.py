"""Checking a request's SigV4 signature as AWS does: the signature recomputed with
botocore's signer from the request as it arrived (its path, the headers it signed, its
body, its ``X-Amz-Date``) and the secret key the fake knows; the credential scope's
access key, date, region and service checked too."""

from __future__ import annotations

import datetime
import hmac
import re

_AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/,]+)/(?P<date>\d{8})/(?P<region>[^/,]+)/"
                   r"(?P<service>[^/,]+)/aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;_-]+), ?"
                   r"Signature=(?P<signature>[0-9a-f]{64})$")
#: how far a request's X-Amz-Date may be from the fake's clock (AWS allows 15 minutes)
MAX_SKEW = datetime.timedelta(minutes=15)

MISSING = "Missing Authentication Token"
UNKNOWN_KEY = "The security token included in the request is invalid."
BAD_SIGNATURE = ("The request signature we calculated does not match the signature you provided. Check your AWS "
                 "Secret Access Key and signing method. Consult the service documentation for details.")


def problem(method: str, url: str, headers: dict[str, str], body: bytes, *, access_key: str, secret_key: str,
            region: str, service: str = "bedrock") -> str | None:
    """Why AWS would refuse this request's signature (None: it would not). ``url`` is the
    request's URL as received; ``headers`` have lower-case names."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    found = _AUTH.match(headers.get("authorization", ""))
    if found is None:
        return MISSING
    if found["key"] != access_key:
        return UNKNOWN_KEY
    if found["region"] != region:
        return f"Credential should be scoped to a valid region, not '{found['region']}'."
    if found["service"] != service:
        return f"Credential should be scoped to correct service: '{service}'."
    stamp = headers.get("x-amz-date", "")
    try:
        when = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.UTC)
    except ValueError:
        return "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
    if abs(datetime.datetime.now(datetime.UTC) - when) > MAX_SKEW or stamp[:8] != found["date"]:
        return "Signature expired: the request's date is not the credential's, or is too far from now."
    signed = found["signed"].split(";")
    if "host" not in signed or any(name not in headers for name in signed):
        return BAD_SIGNATURE
    request = AWSRequest(method=method, url=url, data=body, headers={name: headers[name] for name in signed})
    request.context["timestamp"] = stamp
    signer = SigV4Auth(Credentials(access_key, secret_key), service, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, found["signature"]) else BAD_SIGNATURE


def exception_for(problem_text: str) -> str:
    """The exception AWS names in ``x-amzn-ErrorType`` for an authentication problem."""
    if problem_text == MISSING:
        return "MissingAuthenticationTokenException"
    if problem_text == UNKNOWN_KEY:
        return "UnrecognizedClientException"
    if problem_text.startswith("Signature expired"):
        return "InvalidSignatureException"
    if problem_text == BAD_SIGNATURE:
        return "InvalidSignatureException"
    return "AccessDeniedException"
