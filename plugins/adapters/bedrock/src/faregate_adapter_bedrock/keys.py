"""A Bedrock channel's key, as new-api writes it: ``AK|SK|region`` (an IAM access key,
signed with SigV4) or ``APIKEY|region`` (a Bedrock API key, sent as a bearer token); the
region may instead be the channel's ``other`` field (``AK|SK``, ``APIKEY``). The setting
``aws_key_type`` (``ak_sk`` | ``api_key``, new-api's) says which one; without it the key's
shape does. Messages never quote the key."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from faregate.api import GatewayError

#: an AWS region (``us-east-1``, ``us-gov-west-1``, ``ap-southeast-2`` …): also a host label
REGION = re.compile(r"[a-z]{2}(?:-[a-z]+){1,2}-\d{1,2}")
ACCESS_KEY = re.compile(r"[A-Z0-9]{16,128}")
SECRET_KEY = re.compile(r"[A-Za-z0-9/+=]{16,128}")
#: a Bedrock API key (long-term ``ABSK…`` or a short-term token): visible ASCII, no separator
API_KEY = re.compile(r"[!-{}~]{16,16384}")
KEY_TYPES = ("ak_sk", "api_key")


class KeyProblem(ValueError):
    """What is wrong with a key (a message that never quotes it)."""


@dataclass(frozen=True, slots=True)
class AwsKey:
    region: str
    access_key: str = ""
    secret_key: str = ""
    api_key: str = ""

    @property
    def sigv4(self) -> bool:
        return bool(self.access_key)


def _key_type(settings: Mapping[str, Any]) -> str:
    kind = settings.get("aws_key_type") or ""
    if kind not in ("", *KEY_TYPES):
        raise KeyProblem("the setting aws_key_type must be ak_sk or api_key")
    return str(kind)


def _region(given: str | None, other: str) -> str:
    other = other.strip()
    if given is not None:
        if not REGION.fullmatch(given):
            raise KeyProblem("the region after the last | is not an AWS region (such as us-east-1)")
        return given
    if not other:
        raise KeyProblem("no region: end the key with |region (such as |us-east-1) or put the region in other")
    if not REGION.fullmatch(other):
        raise KeyProblem("other must be an AWS region (such as us-east-1)")
    return other


@functools.lru_cache(maxsize=256)
def _parse(key: str, other: str, kind: str) -> AwsKey:
    parts = [p.strip() for p in key.strip().split("|")]
    if not kind:  # new-api's shapes: AK|SK|region, APIKEY|region; AK|SK or APIKEY with the region in other
        kind = "ak_sk" if len(parts) == 3 or (len(parts) == 2 and not REGION.fullmatch(parts[1])) else "api_key"
    if kind == "ak_sk":
        if len(parts) not in (2, 3):
            raise KeyProblem("an access key is written AK|SK|region (or AK|SK with the region in other)")
        if not ACCESS_KEY.fullmatch(parts[0]):
            raise KeyProblem("the access key id (before the first |) must be 16 to 128 upper-case letters and digits")
        if not SECRET_KEY.fullmatch(parts[1]):
            raise KeyProblem("the secret access key (after the first |) must be 16 to 128 characters of A-Z a-z "
                             "0-9 / + =")
        return AwsKey(region=_region(parts[2] if len(parts) == 3 else None, other), access_key=parts[0],
                      secret_key=parts[1])
    if len(parts) not in (1, 2):
        raise KeyProblem("a Bedrock API key is written APIKEY|region (or APIKEY with the region in other)")
    if not API_KEY.fullmatch(parts[0]):
        raise KeyProblem("the Bedrock API key must be 16 or more visible ASCII characters without | or spaces")
    return AwsKey(region=_region(parts[1] if len(parts) == 2 else None, other), api_key=parts[0])


def parse_key(key: str, other: str, settings: Mapping[str, Any]) -> AwsKey:
    """The key as :class:`AwsKey`; :class:`KeyProblem` says what is wrong with it."""
    return _parse(key, other, _key_type(settings))


def key_problem(key: str, other: str, settings: Mapping[str, Any]) -> str | None:
    try:
        parse_key(key, other, settings)
    except KeyProblem as exc:
        return str(exc)
    return None


def channel_key(key: str, other: str, settings: Mapping[str, Any]) -> AwsKey:
    """For a call: a bad key is the channel's problem (another channel may serve)."""
    try:
        return parse_key(key, other, settings)
    except KeyProblem as exc:
        raise GatewayError(503, f"the channel's AWS key cannot be used: {exc}", code="channel:invalid_key") from None
