"""What a channel adds to each of its upstream requests, compiled once when the snapshot
loads it: the parameter override, the header override, the system prompt and the proxy
(channel settings ``system_prompt``, ``system_prompt_override``, ``proxy``). The same
functions check these fields when a channel is saved, so a bad value is a 400 naming the
field and never stored; a value stored before these checks (or by hand) that they refuse
makes the channel fail its attempts with ``channel:param_override_invalid`` (another
channel serves), and is logged once."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from faregate.net.proxy import check_proxy
from faregate.overrides.headers import HeaderPlan, compile_headers
from faregate.overrides.params import ParamOverride, compile_override

log = logging.getLogger("faregate.state")

MAX_SYSTEM_PROMPT = 65_536


@dataclass(frozen=True, slots=True)
class ChannelFeatures:
    param_override: ParamOverride | None = None
    headers: HeaderPlan | None = None
    system_prompt: str = ""
    #: also put the channel's prompt before a system prompt the caller sent
    system_prompt_override: bool = False
    proxy: str = ""
    #: why a stored value was refused (the channel's attempts fail with it); "" when none
    problem: str = ""


NO_FEATURES = ChannelFeatures()


def check_setting(setting: dict[str, Any]) -> dict[str, Any]:
    """The settings this module reads, checked: ``proxy`` (an http/https/socks URL or
    empty), ``system_prompt`` (text), ``system_prompt_override`` (a boolean). Returns
    them normalised; ``ValueError`` names the setting."""
    out: dict[str, Any] = {}
    proxy = setting.get("proxy")
    if proxy not in (None, ""):
        if not isinstance(proxy, str):
            raise ValueError("setting.proxy must be a URL string")
        try:
            out["proxy"] = check_proxy(proxy)
        except ValueError as exc:
            raise ValueError(f"setting.proxy {exc}") from None
    prompt = setting.get("system_prompt")
    if prompt is not None:
        if not isinstance(prompt, str) or len(prompt) > MAX_SYSTEM_PROMPT or "\x00" in prompt:
            raise ValueError(f"setting.system_prompt must be a text of at most {MAX_SYSTEM_PROMPT} characters")
        out["system_prompt"] = prompt
    override = setting.get("system_prompt_override")
    if override is not None and not isinstance(override, bool):
        raise ValueError("setting.system_prompt_override must be true or false")
    out["system_prompt_override"] = bool(override)
    return out


def compile_features(channel_id: int, param_override: str | None, header_override: str | None,
                     setting: dict[str, Any]) -> ChannelFeatures:
    """The features of one channel row (at snapshot load)."""
    if not param_override and not header_override and not setting:
        return NO_FEATURES
    try:
        checked = check_setting(setting)
        override = compile_override(param_override)
        headers = compile_headers(header_override)
    except ValueError as exc:
        log.warning("channel %s: a stored override or setting is refused (%s); its requests fail until it is "
                    "fixed", channel_id, exc)
        return ChannelFeatures(problem=str(exc)[:300])
    if override is None and headers is None and not checked.get("system_prompt") and not checked.get("proxy"):
        return NO_FEATURES
    return ChannelFeatures(param_override=override, headers=headers, system_prompt=checked.get("system_prompt", ""),
                           system_prompt_override=checked["system_prompt_override"], proxy=checked.get("proxy", ""))
