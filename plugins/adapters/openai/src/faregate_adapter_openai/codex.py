"""The channel type ``codex`` (new-api's 57): ChatGPT's Codex backend reached with a
ChatGPT sign-in's OAuth credentials instead of an API key. The channel key is a JSON
object ``{"access_token": …, "account_id": …}`` (what Codex CLI keeps after a sign-in;
other fields such as ``refresh_token`` are ignored): the token goes as the bearer
credential, the account as ``chatgpt-account-id``. It serves the endpoints new-api's
Codex adaptor serves that this plugin knows: ``/v1/alpha/search`` (Codex's standalone web
search), under ``/backend-api/codex``."""

from __future__ import annotations

import functools
from typing import ClassVar

from faregate.api import GatewayError, UpstreamTarget, json_loads
from faregate_adapter_openai.provider import OpenAICompatibleProvider

CODEX_TYPE = 57
ALPHA_SEARCH = "alpha_search"


def _bad_key() -> GatewayError:
    # the operator's configuration, not the caller's request: another channel may serve it
    return GatewayError(500, "codex channel: the key must be a JSON object with access_token and account_id",
                        code="channel:invalid_key")


@functools.lru_cache(maxsize=256)
def oauth_credentials(key: str) -> tuple[str, str]:
    """``(access_token, account_id)`` of a Codex channel key (parsed once per key)."""
    try:
        obj = json_loads(key)
    except ValueError:
        raise _bad_key() from None
    if not isinstance(obj, dict):
        raise _bad_key()
    token, account = obj.get("access_token"), obj.get("account_id")
    if not (isinstance(token, str) and token.strip() and isinstance(account, str) and account.strip()):
        raise _bad_key()
    return token.strip(), account.strip()


class CodexProvider(OpenAICompatibleProvider):
    name = "codex"
    channel_types = (CODEX_TYPE,)
    default_base_url = "https://chatgpt.com"
    endpoints = frozenset({ALPHA_SEARCH})
    json_paths: ClassVar[dict[str, str]] = {ALPHA_SEARCH: "/backend-api/codex/alpha/search"}
    models_path = None

    def serves(self, endpoint: str, channel_type: int) -> bool:
        # no preset row: the OpenAI row would name OpenAI's endpoints, none of which Codex serves here
        return endpoint in self.endpoints

    def auth_headers(self, target: UpstreamTarget) -> dict[str, str]:
        token, account = oauth_credentials(target.key)
        # the headers Codex CLI sends; the backend refuses requests without them
        return {"Authorization": f"Bearer {token}", "chatgpt-account-id": account,
                "OpenAI-Beta": "responses=experimental", "originator": "codex_cli_rs"}
