"""The vendors that speak OpenAI's wire format, as data: one :class:`Preset` a channel type
(new-api's numbers; Groq, Together and Fireworks, which new-api lacks, from Faregate's own
range, :data:`FAREGATE_TYPES`). A row says where the vendor's API lives (default base URL,
the root its OpenAI paths hang from, paths of its own), which endpoint kinds it serves, how
the key is sent, whether it lists its models, which API tells its balance, and what it refuses (parameters dropped or
renamed on the way, ``stream_options``). Adding a vendor is one row of :data:`PRESETS`.

Everything here is pure and cheap: the provider looks a row up per request (a dict get)
and a body is copied only when a quirk actually changes it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import quote

from faregate.api import GatewayError, bad_request, join_url

#: Faregate's own channel types for OpenAI-compatible vendors new-api has no number for: well
#: above new-api's (its forks start at 100), so an imported configuration never collides
FAREGATE_TYPES = range(1000, 2000)
#: every endpoint kind the OpenAI wire format has (a row without ``endpoints`` serves them all)
ALL_ENDPOINTS = frozenset({"chat", "embeddings", "moderations", "completions", "rerank", "images", "image_edits",
                           "responses", "responses_compact", "audio_transcriptions", "audio_translations",
                           "audio_speech", "realtime"})
#: where OpenAI serves each kind; a row's ``api_root`` replaces the ``/v1``
OPENAI_PATHS: Mapping[str, str] = MappingProxyType({
    "chat": "/v1/chat/completions", "models": "/v1/models", "realtime": "/v1/realtime",
    "embeddings": "/v1/embeddings", "moderations": "/v1/moderations", "completions": "/v1/completions",
    "rerank": "/v1/rerank", "images": "/v1/images/generations", "image_edits": "/v1/images/edits",
    "responses": "/v1/responses", "responses_compact": "/v1/responses/compact",
    "audio_transcriptions": "/v1/audio/transcriptions", "audio_translations": "/v1/audio/translations",
    "audio_speech": "/v1/audio/speech"})
#: a Cloudflare account id (32 hex digits today; bounded, URL-safe whatever it becomes)
_ACCOUNT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_EMPTY: Mapping[str, str] = MappingProxyType({})
#: the suffix that marks a Custom channel's base URL as new-api's whole chat URL
_CHAT_SUFFIX = "/chat/completions"


@dataclass(frozen=True, slots=True)
class Preset:
    """One OpenAI-compatible vendor (see the module docstring)."""

    channel_type: int
    name: str
    #: used when the channel has no base URL; "" means the channel must give one
    base_url: str = ""
    #: where OpenAI's ``/v1`` lives under the base URL (``{account}``: the channel's ``other``)
    api_root: str = "/v1"
    #: the endpoint kinds it serves (None: all of OpenAI's, as new-api's OpenAI adaptor forwards)
    endpoints: frozenset[str] | None = None
    #: kinds it serves elsewhere than under its root: the path under the base URL, literally
    paths: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    #: whether ``GET {root}/models`` lists its models (OpenAI's ``{"data": [...]}`` or a bare array)
    lists_models: bool = True
    #: whether it takes ``stream_options`` (when not, streams are billed on the usage it sends
    #: anyway, else on the gateway's estimate)
    stream_options: bool = True
    #: the output bound's name; ``max_tokens``: a client's ``max_completion_tokens`` is renamed
    #: too (a vendor that ignores the newer name would otherwise write past the client's bound)
    max_tokens_field: str = "max_completion_tokens"
    #: body fields it refuses: dropped from chat and completion bodies
    dropped: frozenset[str] = frozenset()
    #: body fields it names otherwise: renamed (unless the client already sent the new name)
    renamed: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    #: False when it refuses ``messages[].name``
    message_names: bool = True
    #: the key may be ``KEY|APPID``: the part after ``|`` goes in an ``appid`` header (Baidu)
    key_appid: bool = False
    #: new-api's Custom channel: a base URL ending in ``/chat/completions`` is the whole chat URL
    #: (``{model}`` in it replaced), the other kinds beside it
    whole_url: bool = False
    #: the balance API that tells the account's balance (:data:`faregate_adapter_openai.billing.READERS`:
    #: ``openai``'s billing endpoints, ``deepseek``, ``openrouter``, ``siliconflow``, ``moonshot``); "": none
    balance: str = ""

    def serves(self, endpoint: str) -> bool:
        return endpoint in (ALL_ENDPOINTS if self.endpoints is None else self.endpoints)

    # ---- where ---------------------------------------------------------------------------
    def root(self, other: str) -> str:
        if "{account}" not in self.api_root:
            return self.api_root
        account = other.strip()
        if not _ACCOUNT.match(account):
            raise GatewayError(500, f"{self.name} channel: put the account id in the channel's other field",
                               code="channel:invalid_other")
        return self.api_root.replace("{account}", account)

    def base(self, base_url: str) -> str:
        """The channel's base URL, else this row's; a channel error when there is neither."""
        base = (base_url or self.base_url).rstrip("/")
        if not base:
            raise GatewayError(500, f"{self.name} channel: it has no default base URL, give the channel one",
                               code="channel:invalid_base_url")
        return base

    def url(self, base_url: str, kind: str, openai_path: str, other: str = "", model: str = "") -> str:
        """The URL of ``kind`` (``openai_path`` is where OpenAI serves it) under ``base_url``
        (the channel's, else this row's)."""
        base = self.base(base_url)
        if self.whole_url and base.endswith(_CHAT_SUFFIX):
            base = base[: -len(_CHAT_SUFFIX)]
            if "{model}" in base:
                base = base.replace("{model}", path_segment(model))
            return base + (openai_path[3:] if openai_path.startswith("/v1/") else openai_path)
        own = self.paths.get(kind)
        if own is not None:
            return join_url(base, own)
        if not openai_path.startswith("/v1/"):  # a provider's own path (Codex's, say)
            return join_url(base, openai_path)
        root = self.root(other)
        rest = openai_path[3:]
        if root and base.endswith(root):  # the admin typed the root into the base URL
            return base + rest
        return join_url(base, root + rest) if root else base + rest

    def auth_headers(self, header: str, prefix: str, key: str) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self.key_appid and "|" in key:
            key, _, appid = key.partition("|")
            if appid.strip():
                headers["appid"] = appid.strip()
        headers[header] = prefix + key.strip()
        return headers

    # ---- what ----------------------------------------------------------------------------
    def adapt(self, body: dict[str, Any], stream: bool) -> dict[str, Any] | None:
        """``body`` (a chat or completion request) as this vendor takes it: refused fields
        dropped, renamed ones renamed, ``stream_options.include_usage`` asked for (the
        gateway bills from it) or removed. None when nothing changes (the client's bytes
        go up untouched)."""
        out: dict[str, Any] | None = None
        for name in self.dropped:
            if name in body:
                out = out if out is not None else dict(body)
                del out[name]
        for old, new in self.renamed.items():
            if old in body:
                out = _renamed(out if out is not None else dict(body), old, new)
        if self.max_tokens_field == "max_tokens" and "max_completion_tokens" in body:
            out = _renamed(out if out is not None else dict(body), "max_completion_tokens", "max_tokens")
        if not self.message_names and _named_messages(body):
            out = out if out is not None else dict(body)
            out["messages"] = [{k: v for k, v in m.items() if k != "name"} if isinstance(m, dict) else m
                               for m in body["messages"]]
        options = body.get("stream_options")
        if not self.stream_options:
            if "stream_options" in body:
                out = out if out is not None else dict(body)
                del out["stream_options"]
        elif stream and not (isinstance(options, dict) and options.get("include_usage") is True):
            out = out if out is not None else dict(body)
            out["stream_options"] = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        return out


def path_segment(name: str) -> str:
    """``name`` (a model, a deployment) as one URL path segment: every reserved character
    escaped, so it cannot reach another path or add a query; a name of dots alone is
    refused, since URL normalisation would climb the path with it even escaped."""
    if not name.strip("."):
        raise bad_request(f"the model name {name!r} cannot be used in an upstream URL", param="model")
    return quote(name, safe="")


def _renamed(body: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    value = body.pop(old)
    body.setdefault(new, value)
    return body


def _named_messages(body: dict[str, Any]) -> bool:
    messages = body.get("messages")
    return isinstance(messages, list) and any(isinstance(m, dict) and "name" in m for m in messages)


#: the OpenAI row: a channel type with no row of its own is treated as OpenAI itself
OPENAI = Preset(1, "openai", "https://api.openai.com", balance="openai")
_CHAT = frozenset({"chat"})
_MISTRAL_REFUSES = frozenset({"user", "logprobs", "top_logprobs", "logit_bias", "service_tier", "store",
                              "reasoning_effort", "modalities", "audio", "web_search_options", "prompt_cache_key",
                              "safety_identifier", "verbosity", "metadata"})

_ROWS = (
    OPENAI,
    Preset(4, "ollama", "http://localhost:11434", endpoints=frozenset({"chat", "completions", "embeddings"}),
           max_tokens_field="max_tokens"),
    # the resellers new-api still lists: OpenAI's API at another host
    Preset(6, "openai-max", "https://api.openaimax.com"),
    Preset(7, "ohmygpt", "https://api.ohmygpt.com"),
    Preset(8, "custom", whole_url=True, balance="openai"),  # vLLM, LiteLLM, LocalAI …: any OpenAI-compatible server
    Preset(9, "ails", "https://api.caipacity.com"),
    Preset(10, "aiproxy", "https://api.aiproxy.io"),
    Preset(12, "api2gpt", "https://api.api2gpt.com"),
    Preset(13, "aigc2d", "https://api.aigc2d.com"),
    Preset(17, "dashscope", "https://dashscope.aliyuncs.com", api_root="/compatible-mode/v1",
           endpoints=frozenset({"chat", "completions", "embeddings"}), max_tokens_field="max_tokens"),
    Preset(19, "360", "https://api.360.cn"),
    Preset(20, "openrouter", "https://openrouter.ai/api",
           endpoints=frozenset({"chat", "completions", "embeddings", "responses"}), max_tokens_field="max_tokens",
           balance="openrouter"),
    Preset(21, "aiproxy-library", "https://api.aiproxy.io"),
    Preset(22, "fastgpt", "https://fastgpt.run/api/openapi"),
    Preset(25, "moonshot", "https://api.moonshot.cn", endpoints=_CHAT, max_tokens_field="max_tokens",
           balance="moonshot"),
    Preset(26, "zhipu-v4", "https://open.bigmodel.cn", api_root="/api/paas/v4",
           endpoints=frozenset({"chat", "embeddings"}), lists_models=False, max_tokens_field="max_tokens"),
    Preset(27, "perplexity", "https://api.perplexity.ai", api_root="", endpoints=frozenset({"chat", "responses"}),
           paths=MappingProxyType({"responses": "/v1/responses"}), lists_models=False, stream_options=False,
           max_tokens_field="max_tokens", dropped=frozenset({"logit_bias", "logprobs", "top_logprobs"})),
    Preset(31, "lingyiwanwu", "https://api.lingyiwanwu.com", endpoints=_CHAT, stream_options=False,
           max_tokens_field="max_tokens"),
    Preset(35, "minimax", "https://api.minimax.chat", endpoints=_CHAT,
           paths=MappingProxyType({"chat": "/v1/text/chatcompletion_v2"}), lists_models=False,
           max_tokens_field="max_tokens"),
    Preset(39, "cloudflare", "https://api.cloudflare.com", api_root="/client/v4/accounts/{account}/ai/v1",
           endpoints=frozenset({"chat", "embeddings", "responses"}), lists_models=False,
           max_tokens_field="max_tokens"),
    Preset(40, "siliconflow", "https://api.siliconflow.cn",
           endpoints=frozenset({"chat", "embeddings", "rerank", "audio_transcriptions", "audio_speech"}),
           max_tokens_field="max_tokens", balance="siliconflow"),
    Preset(42, "mistral", "https://api.mistral.ai", endpoints=frozenset({"chat", "embeddings",
                                                                        "audio_transcriptions"}),
           stream_options=False, max_tokens_field="max_tokens", dropped=_MISTRAL_REFUSES,
           renamed=MappingProxyType({"seed": "random_seed"})),
    # completions: DeepSeek's FIM beta, where new-api calls it
    Preset(43, "deepseek", "https://api.deepseek.com", endpoints=frozenset({"chat", "completions"}),
           paths=MappingProxyType({"completions": "/beta/completions"}), max_tokens_field="max_tokens",
           balance="deepseek"),
    Preset(45, "volcengine", "https://ark.cn-beijing.volces.com", api_root="/api/v3",
           endpoints=frozenset({"chat", "embeddings", "images", "responses"}), lists_models=False,
           max_tokens_field="max_tokens"),
    Preset(46, "baidu-v2", "https://qianfan.baidubce.com", api_root="/v2",
           endpoints=frozenset({"chat", "embeddings", "images"}), lists_models=False, key_appid=True,
           max_tokens_field="max_tokens"),
    Preset(47, "xinference", endpoints=frozenset({"chat", "embeddings", "audio_transcriptions",
                                                  "audio_translations", "audio_speech"}),
           stream_options=False, max_tokens_field="max_tokens"),
    # images: generations (its edits take another JSON shape); it serves the Responses API itself
    Preset(48, "xai", "https://api.x.ai", endpoints=frozenset({"chat", "images", "responses"})),
    Preset(1001, "groq", "https://api.groq.com", api_root="/openai/v1",
           endpoints=frozenset({"chat", "responses", "audio_transcriptions", "audio_translations", "audio_speech"}),
           dropped=frozenset({"logprobs", "logit_bias", "top_logprobs"}), message_names=False),
    Preset(1002, "together", "https://api.together.xyz",
           endpoints=frozenset({"chat", "completions", "embeddings", "images", "rerank", "audio_speech",
                                "audio_transcriptions"}), stream_options=False, max_tokens_field="max_tokens"),
    Preset(1003, "fireworks", "https://api.fireworks.ai", api_root="/inference/v1",
           endpoints=frozenset({"chat", "completions", "embeddings"}), stream_options=False,
           max_tokens_field="max_tokens"),
    # vLLM's OpenAI-compatible server as `vllm serve` starts it (port 8000, OpenAI's /v1 paths,
    # its /v1/rerank and Whisper's transcriptions); new-api has no type for it (Custom, 8, works too)
    Preset(1004, "vllm", "http://localhost:8000",
           endpoints=frozenset({"chat", "completions", "embeddings", "rerank", "audio_transcriptions",
                                "audio_translations"})),
)

#: every row, by channel type
PRESETS: Mapping[int, Preset] = MappingProxyType({row.channel_type: row for row in _ROWS})
