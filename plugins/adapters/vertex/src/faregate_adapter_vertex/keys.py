"""A Vertex channel's key, per new-api's setting ``vertex_key_type``: ``json``, a service
account's key file (its JSON, pasted as the file came), exchanged for OAuth access tokens;
or ``api_key``, a Vertex AI API key (express mode), sent in ``x-goog-api-key``. Without the
setting the key's shape says which. The region is the channel's ``other``: one region
(``us-central1``, ``global``), or new-api's map of model → region with a ``default``.
Messages never quote the key."""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from faregate.api import GatewayError, JSONDecodeError, json_loads
from faregate_adapter_vertex.names import GLOBAL

KEY_TYPES = ("json", "api_key")
#: a Google Cloud location (``us-central1``, ``europe-west4``, ``global``): also a host label
REGION = re.compile(r"global|[a-z]+-[a-z]+\d{1,2}")
#: a Google Cloud project id (it goes in the URL path)
PROJECT = re.compile(r"[a-z][a-z0-9-]{4,28}[a-z0-9]")
API_KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")
EMAIL = re.compile(r"[^@\s]{1,128}@[^@\s]{1,255}")
REQUIRED = ("client_email", "private_key", "token_uri", "project_id")
LOOPBACK_NAMES = ("localhost",)


class KeyProblem(ValueError):
    """What is wrong with a key (a message that never quotes it)."""


@dataclass(frozen=True, slots=True)
class ServiceAccount:
    """The parts of a service-account key the gateway reads (``info`` is the whole key,
    for google-auth)."""

    project_id: str
    client_email: str
    token_uri: str
    info: Mapping[str, Any] = field(repr=False, compare=False)


def key_type(key: str, settings: Mapping[str, Any]) -> str:
    kind = settings.get("vertex_key_type") or ""
    if kind not in ("", *KEY_TYPES):
        raise KeyProblem("the setting vertex_key_type must be json or api_key")
    if kind:
        return str(kind)
    return "json" if key.lstrip().startswith("{") else "api_key"


def _token_uri_problem(uri: Any) -> str | None:
    """A token endpoint the gateway may post a signed assertion to: https (a metadata server
    speaks plain http only), or http to this host's loopback (a local fake or proxy)."""
    if not isinstance(uri, str) or len(uri) > 2048:
        return "its token_uri must be a URL"
    parts = urlsplit(uri)
    if parts.username is not None or parts.password is not None or not parts.hostname:
        return "its token_uri must be an https URL without credentials"
    if parts.scheme == "https":
        return None
    host = parts.hostname
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host in LOOPBACK_NAMES
    if parts.scheme == "http" and loopback:
        return None
    return "its token_uri must be an https URL (plain http only to this host's loopback)"


@functools.lru_cache(maxsize=256)
def service_account(key: str) -> ServiceAccount:
    """The service account a key file describes; :class:`KeyProblem` says what is wrong."""
    try:
        info = json_loads(key)
    except JSONDecodeError:
        raise KeyProblem("a service-account key must be the JSON of its key file") from None
    if not isinstance(info, dict):
        raise KeyProblem("a service-account key must be a JSON object")
    if info.get("type", "service_account") != "service_account":
        raise KeyProblem("the JSON is not a service account's key file (its type is not service_account)")
    missing = [name for name in REQUIRED if not isinstance(info.get(name), str) or not info[name]]
    if missing:
        raise KeyProblem(f"the service-account key has no {', '.join(missing)}")
    if not PROJECT.fullmatch(info["project_id"]):
        raise KeyProblem("the service account's project_id is not a Google Cloud project id")
    if not EMAIL.fullmatch(info["client_email"]):
        raise KeyProblem("the service account's client_email is not an email address")
    if "-----BEGIN PRIVATE KEY-----" not in info["private_key"]:
        raise KeyProblem("the service account's private_key is not a PEM private key")
    problem = _token_uri_problem(info["token_uri"])
    if problem is not None:
        raise KeyProblem(f"the service-account key: {problem}")
    return ServiceAccount(project_id=info["project_id"], client_email=info["client_email"],
                          token_uri=info["token_uri"], info=info)


def _signer_problem(account: ServiceAccount) -> str | None:
    """Whether google-auth can sign with the key (an RSA key it can load)."""
    from google.auth import crypt

    try:
        crypt.RSASigner.from_service_account_info(dict(account.info))  # type: ignore[no-untyped-call]
    except (ValueError, TypeError, KeyError):
        return "the service account's private_key cannot be loaded (not an RSA private key)"
    return None


def other_problem(other: str) -> str | None:
    """``other``: empty (``global``), one location, or a JSON map of model → location."""
    other = other.strip()
    if not other:
        return None
    if other.startswith("{"):
        try:
            regions = json_loads(other)
        except JSONDecodeError:
            return "other is not valid JSON (a region, or a map of model → region)"
        if not isinstance(regions, dict) or not all(isinstance(v, str) and REGION.fullmatch(v)
                                                    for v in regions.values()):
            return "other must map models to Vertex AI regions (such as us-central1, global)"
        return None
    return None if REGION.fullmatch(other) else "other must be a Vertex AI region (such as us-central1, global)"


def key_problem(key: str, other: str, settings: Mapping[str, Any]) -> str | None:
    """For :meth:`Provider.check_key`: the key, ``other`` and the project setting."""
    try:
        kind = key_type(key, settings)
        problem = other_problem(other)
        if problem is not None:
            return problem
        project = settings.get("vertex_project")
        if project is not None and (not isinstance(project, str) or not PROJECT.fullmatch(project)):
            return "the setting vertex_project is not a Google Cloud project id"
        if kind == "api_key":
            if key.lstrip().startswith("{"):
                return "vertex_key_type is api_key but the key is JSON (a service account's key file?)"
            return None if API_KEY.fullmatch(key.strip()) else "a Vertex AI API key is 16 to 512 URL-safe characters"
        return _signer_problem(service_account(key))
    except KeyProblem as exc:
        return str(exc)


def region_for(other: str, model: str) -> str:
    """The location of a call for ``model``: new-api's rule (the model's entry of a JSON
    map, else its ``default``, else ``global``; a plain region as it is; empty: ``global``)."""
    other = other.strip()
    if not other:
        return GLOBAL
    if other.startswith("{"):
        try:
            regions = json_loads(other)
        except JSONDecodeError:
            regions = None
        if isinstance(regions, dict):
            found = regions.get(model) or regions.get("default")
            return found if isinstance(found, str) and REGION.fullmatch(found) else GLOBAL
    return other if REGION.fullmatch(other) else GLOBAL


def channel_error(message: str) -> GatewayError:
    """The channel's configuration is at fault: another channel may serve."""
    return GatewayError(503, f"the Vertex AI channel cannot be called: {message}", code="channel:invalid_key")
