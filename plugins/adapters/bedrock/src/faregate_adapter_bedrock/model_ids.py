"""Model names ⇄ Bedrock model ids. A client may name a Claude or Nova model as Anthropic
or new-api do (``claude-sonnet-4-5``, ``claude-3-5-haiku-20241022``, ``nova-pro-v1:0``);
the channel then calls the Bedrock id, through the cross-region inference profile of the
channel's geography (``us.``, ``eu.``, ``apac.``) where the model has one: newer Claude
models are served only that way. Any other name (a Bedrock id such as
``meta.llama3-1-70b-instruct-v1:0``, an inference profile id or ARN) is called as it is.
Claude models go through InvokeModel in Anthropic's own Messages format; every other model
through the Converse API."""

from __future__ import annotations

_US, _US_EU_AP = frozenset({"us"}), frozenset({"us", "eu", "apac"})

#: Bedrock ids of the models a client may name as Anthropic (or new-api) does, and the
#: geographies whose cross-region inference profile serves each
_CLAUDE: dict[str, tuple[str, frozenset[str]]] = {
    "claude-3-haiku-20240307": ("anthropic.claude-3-haiku-20240307-v1:0", _US_EU_AP),
    "claude-3-5-sonnet-20240620": ("anthropic.claude-3-5-sonnet-20240620-v1:0", _US_EU_AP),
    "claude-3-5-sonnet-20241022": ("anthropic.claude-3-5-sonnet-20241022-v2:0", _US_EU_AP),
    "claude-3-5-haiku-20241022": ("anthropic.claude-3-5-haiku-20241022-v1:0", _US),
    "claude-3-7-sonnet-20250219": ("anthropic.claude-3-7-sonnet-20250219-v1:0", _US_EU_AP),
    "claude-sonnet-4-20250514": ("anthropic.claude-sonnet-4-20250514-v1:0", _US_EU_AP),
    "claude-opus-4-20250514": ("anthropic.claude-opus-4-20250514-v1:0", _US),
    "claude-opus-4-1-20250805": ("anthropic.claude-opus-4-1-20250805-v1:0", _US),
    "claude-sonnet-4-5-20250929": ("anthropic.claude-sonnet-4-5-20250929-v1:0", _US_EU_AP),
    "claude-haiku-4-5-20251001": ("anthropic.claude-haiku-4-5-20251001-v1:0", _US_EU_AP),
    "claude-opus-4-5-20251101": ("anthropic.claude-opus-4-5-20251101-v1:0", _US_EU_AP),
}
#: Anthropic's aliases (the Anthropic plugin's catalog names) for the dated names above
_ALIASES = {
    "claude-3-5-haiku-latest": "claude-3-5-haiku-20241022", "claude-3-7-sonnet-latest": "claude-3-7-sonnet-20250219",
    "claude-sonnet-4-0": "claude-sonnet-4-20250514", "claude-opus-4-0": "claude-opus-4-20250514",
    "claude-opus-4-1": "claude-opus-4-1-20250805", "claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5": "claude-haiku-4-5-20251001", "claude-opus-4-5": "claude-opus-4-5-20251101",
}
_NOVA: dict[str, tuple[str, frozenset[str]]] = {
    "nova-micro-v1:0": ("amazon.nova-micro-v1:0", _US_EU_AP),
    "nova-lite-v1:0": ("amazon.nova-lite-v1:0", _US_EU_AP),
    "nova-pro-v1:0": ("amazon.nova-pro-v1:0", _US_EU_AP),
    "nova-premier-v1:0": ("amazon.nova-premier-v1:0", _US),
}
#: a region's prefix (``us-east-1`` → ``us``) → its inference profiles' geography
_GEOGRAPHY = {"us": "us", "eu": "eu", "ap": "apac"}

#: the names the console offers for a Bedrock channel
CATALOG = (*_ALIASES, *_NOVA)


def bedrock_model_id(model: str, region: str) -> str:
    """The id to call for ``model`` in ``region``."""
    known = _CLAUDE.get(_ALIASES.get(model, model)) or _NOVA.get(model)
    if known is None:
        return model
    model_id, geographies = known
    geography = _GEOGRAPHY.get(region.split("-", 1)[0])
    return f"{geography}.{model_id}" if geography in geographies else model_id


def is_anthropic(model: str) -> bool:
    """Whether ``model`` (a client's name or a Bedrock id) is a Claude model, called in
    Anthropic's Messages format; an application inference profile ARN says nothing of its
    model and goes through Converse, which serves Claude too."""
    name = model.rsplit("/", 1)[-1]
    return name.startswith("claude") or "anthropic.claude" in name
