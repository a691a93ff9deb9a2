"""one-api's database (songquanpeng/one-api, which new-api forked) read as new-api's.

The tables have the same names and mostly the same columns; what differs is translated row
by row before the new-api reading (:mod:`faregate.importing.rows`) sees it:

* **channel types**: the two projects numbered their vendors apart after the fork (one-api's
  35 is Cohere, new-api's 35 MiniMax). Each one-api type becomes the type serving the same
  vendor at the same upstream URL, or the row is refused when there is none (DeepL, Novita,
  one-api's generic proxy). A vendor one-api reached as "OpenAI at another host" (API2D,
  Baichuan, StepFun …) becomes an OpenAI channel at that host.
* **channel settings** live in one-api's ``config`` JSON and ``system_prompt`` column: the API
  version (Azure, Gemini), Cloudflare's account id, Vertex's region and project go where
  new-api keeps them (``other``, ``setting``, the key).
* **keys**: one-api's ``models`` (allowed models) and ``subnet`` (allowed networks) are
  new-api's ``model_limits`` and ``allow_ips``.
* **logs**: ``elapsed_time`` is milliseconds, new-api's ``use_time`` seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from faregate import jsonutil
from faregate.importing.rows import Rejected

NEW_API, ONE_API, AUTO = "new-api", "one-api", "auto"
SCHEMAS = (AUTO, NEW_API, ONE_API)
#: what only new-api (and its later versions) has: a source holding any of these is new-api's
NEW_API_TABLES = frozenset({"top_ups", "setups", "quota_data", "midjourneys", "tasks"})
NEW_API_CHANNEL_COLUMNS = frozenset({"channel_info", "tag", "auto_ban", "status_code_mapping", "setting"})
NEW_API_USER_COLUMNS = frozenset({"aff_count", "deleted_at", "setting"})

Row = dict[str, Any]


def detect_schema(tables: set[str], user_columns: set[str], channel_columns: set[str]) -> str:
    """``new-api`` when the source has anything only new-api writes, else ``one-api``."""
    if tables & NEW_API_TABLES or user_columns & NEW_API_USER_COLUMNS or channel_columns & NEW_API_CHANNEL_COLUMNS:
        return NEW_API
    return ONE_API


@dataclass(frozen=True)
class OneApiType:
    name: str  # one-api's name for it
    target: int  # the (new-api numbered) type serving it here
    #: one-api's default base URL, used when the row names none and ``target`` would not know it
    default_base: str = ""
    #: a row at one-api's default base URL gets the target type's own default instead (its
    #: URL layout differs: Groq's /openai prefix, Replicate's /v1/models/ path)
    clear_default_base: bool = False
    #: the type a row at another base URL becomes (an OpenAI-compatible proxy of the vendor);
    #: None: ``target`` reads any base URL as one-api did
    custom_base_target: int | None = None


_OPENAI = 1
#: one-api's channel types (relay/channeltype/define.go) → the type serving the same upstream here
ONE_API_TYPES: dict[int, OneApiType] = {
    1: OneApiType("OpenAI", 1), 2: OneApiType("API2D", _OPENAI, "https://oa.api2d.net"),
    3: OneApiType("Azure", 3), 4: OneApiType("CloseAI", _OPENAI, "https://api.closeai-proxy.xyz"),
    5: OneApiType("OpenAISB", _OPENAI, "https://api.openai-sb.com"), 6: OneApiType("OpenAIMax", 6),
    7: OneApiType("OhMyGPT", 7), 8: OneApiType("Custom", 8), 9: OneApiType("Ails", 9), 10: OneApiType("AIProxy", 10),
    11: OneApiType("PaLM", 11), 12: OneApiType("API2GPT", 12), 13: OneApiType("AIGC2D", 13),
    14: OneApiType("Anthropic", 14), 15: OneApiType("Baidu", 15), 16: OneApiType("Zhipu", 16),
    17: OneApiType("Ali", 17), 18: OneApiType("Xunfei", 18), 19: OneApiType("AI360", 19),
    20: OneApiType("OpenRouter", 20), 21: OneApiType("AIProxyLibrary", 21), 22: OneApiType("FastGPT", 22),
    23: OneApiType("Tencent", 23), 24: OneApiType("Gemini", 24), 25: OneApiType("Moonshot", 25),
    26: OneApiType("Baichuan", _OPENAI, "https://api.baichuan-ai.com"), 27: OneApiType("Minimax", 35),
    28: OneApiType("Mistral", 42),
    29: OneApiType("Groq", 1001, "https://api.groq.com/openai", clear_default_base=True, custom_base_target=_OPENAI),
    30: OneApiType("Ollama", 4), 31: OneApiType("LingYiWanWu", 31),
    32: OneApiType("StepFun", _OPENAI, "https://api.stepfun.com"), 33: OneApiType("AwsClaude", 33),
    34: OneApiType("Coze", 49), 35: OneApiType("Cohere", 34), 36: OneApiType("DeepSeek", 43),
    37: OneApiType("Cloudflare", 39), 39: OneApiType("TogetherAI", 1002), 40: OneApiType("Doubao", 45),
    42: OneApiType("VertexAI", 41), 44: OneApiType("SiliconFlow", 40), 45: OneApiType("XAI", 48),
    46: OneApiType("Replicate", 56, "https://api.replicate.com/v1/models/", clear_default_base=True),
    47: OneApiType("BaiduV2", 46), 48: OneApiType("XunfeiV2", _OPENAI, "https://spark-api-open.xf-yun.com"),
    49: OneApiType("AliBailian", 17), 50: OneApiType("OpenAICompatible", _OPENAI),
    51: OneApiType("GeminiOpenAICompatible", 24, "https://generativelanguage.googleapis.com/v1beta/openai/",
                   clear_default_base=True, custom_base_target=-1),
}
#: one-api types nothing here serves the way one-api called them
NO_EQUIVALENT = {0: "Unknown", 38: "DeepL", 41: "Novita (its API has no /v1 path)", 43: "Proxy"}

# one-api's types whose config values new-api keeps in ``other``
_OTHER_FROM_CONFIG = {3: "api_version", 18: "api_version", 24: "api_version", 21: "library_id", 17: "plugin",
                      37: "user_id", 34: "user_id"}


def _config(row: Row) -> dict[str, Any]:
    text = row.get("config")
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        value = jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        raise Rejected("config: not valid JSON") from None
    if not isinstance(value, dict):
        raise Rejected("config: not a JSON object")
    return value


def channel(row: Row) -> Row:
    """A one-api channel row as new-api would hold it."""
    kind = int(row.get("type") or 0)
    if kind in NO_EQUIVALENT or kind not in ONE_API_TYPES:
        name = NO_EQUIVALENT.get(kind, "unknown")
        raise Rejected(f"type: one-api's channel type {kind} ({name}) has no equivalent here")
    rule = ONE_API_TYPES[kind]
    out = dict(row)
    base = str(row.get("base_url") or "").strip()
    target = rule.target
    if base and rule.clear_default_base and base.rstrip("/") == rule.default_base.rstrip("/"):
        base = ""
    elif base and rule.custom_base_target is not None and base.rstrip("/") != rule.default_base.rstrip("/"):
        if rule.custom_base_target < 0:
            raise Rejected(f"base_url: one-api's {rule.name} channel at another address has no equivalent here")
        target = rule.custom_base_target
    elif not base and target == _OPENAI and rule.default_base:
        base = rule.default_base
    out["type"], out["base_url"] = target, base
    config = _config(row)
    field = _OTHER_FROM_CONFIG.get(kind)
    if field and isinstance(config.get(field), str) and config[field] and not row.get("other"):
        out["other"] = config[field]
    setting: dict[str, Any] = {}
    if kind == 33 and "|" not in str(row.get("key") or "") and all(config.get(k) for k in ("ak", "sk", "region")):
        out["key"] = f"{config['ak']}|{config['sk']}|{config['region']}"  # new-api's AK|SK|region
    if kind == 42:
        _vertex(out, config, setting)
    prompt = row.get("system_prompt")
    if isinstance(prompt, str) and prompt.strip():
        setting["system_prompt"] = prompt
    if setting:
        out["setting"] = jsonutil.dumps_str(setting)
    return out


def _vertex(out: Row, config: dict[str, Any], setting: dict[str, Any]) -> None:
    """one-api's Vertex key is ``region|project|service-account JSON`` (and the same in
    config); new-api's is the JSON, with the region in ``other``."""
    region, project, account = (str(config.get(k) or "") for k in ("region", "vertex_ai_project_id", "vertex_ai_adc"))
    if not account:
        parts = str(out.get("key") or "").split("|", 2)
        if len(parts) == 3:
            region, project, account = parts
    if account:
        out["key"] = account
    if region and not out.get("other"):
        out["other"] = region
    if project:
        setting["vertex_project"] = project


def token(row: Row) -> Row:
    out = dict(row)
    models = str(row.get("models") or "").strip()
    out["model_limits"], out["model_limits_enabled"] = models, bool(models)  # empty: every model, as in one-api
    out["allow_ips"] = str(row.get("subnet") or "").strip()
    return out


def log(row: Row) -> Row:
    out = dict(row)
    elapsed = row.get("elapsed_time")
    if isinstance(elapsed, int) and not isinstance(elapsed, bool) and elapsed >= 0:
        out["use_time"] = elapsed // 1000
    return out


#: per table, how a one-api row becomes new-api's (tables not listed read as they are)
TRANSLATIONS: dict[str, Callable[[Row], Row]] = {"channels": channel, "tokens": token, "logs": log}


def as_new_api(table: str, row: Row) -> Row:
    translate = TRANSLATIONS.get(table)
    return translate(row) if translate else row
