"""new-api's groups, as its options describe them: which groups a user may give an API
key (``UserUsableGroups``, adjusted per user group by
``group_ratio_setting.group_special_usable_group``: ``"+:g"`` or ``"g"`` adds ``g``,
``"-:g"`` removes it), the price multiplier a user pays in a group (``GroupGroupRatio``,
a user group's own ratio for a using group, else ``GroupRatio``), and the ``auto``
pseudo-group (``AutoGroups``: a key of group ``auto`` uses the first listed group the
user may use that serves the model). The option parsers are here too: a bad value is
refused when an admin writes it, naming what is wrong."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from faregate import jsonutil
from faregate.state.option_specs import MAX_RATIO

#: the width of ``abilities.group`` and of a key's group
GROUP_NAME_MAX = 64
#: the pseudo-group whose keys use the ``AutoGroups`` in order
AUTO = "auto"
#: the description of a user's own group when no option names it
OWN_GROUP = "your group"
MAX_AUTO_GROUPS = 100
MAX_ENTRIES = 1000
DESCRIPTION_MAX = 255


def _object(value: str, what: str) -> dict[str, Any]:
    if not value.strip():
        return {}
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError(f"expected a JSON object of {what}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"expected a JSON object of {what}")
    if len(parsed) > MAX_ENTRIES:
        raise ValueError(f"at most {MAX_ENTRIES} entries")
    return parsed


def _group_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > GROUP_NAME_MAX or name != name.strip():
        raise ValueError(f"{where}: a group name is 1 to {GROUP_NAME_MAX} characters without surrounding spaces")
    return name


def group_group_ratio(value: str) -> dict[str, dict[str, float]]:
    """``{"<user group>": {"<using group>": ratio}}``, each ratio a number from 0 to
    :data:`MAX_RATIO`."""
    out: dict[str, dict[str, float]] = {}
    for user_group, ratios in _object(value, "user group → {using group: ratio}").items():
        _group_name(user_group, repr(user_group[:GROUP_NAME_MAX]))
        if not isinstance(ratios, dict):
            raise ValueError(f"{user_group}: expected an object of using group → ratio")
        inner: dict[str, float] = {}
        for using, ratio in ratios.items():
            _group_name(using, f"{user_group}.{using[:GROUP_NAME_MAX]}")
            if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not math.isfinite(ratio) \
                    or not 0 <= ratio <= MAX_RATIO:
                raise ValueError(f"{user_group}.{using}: expected a number from 0 to {MAX_RATIO:g}")
            inner[using] = float(ratio)
        out[user_group] = inner
    return out


def special_usable_groups(value: str) -> dict[str, dict[str, str]]:
    """``{"<user group>": {"+:<group>" | "<group>": "description", "-:<group>": ""}}``."""
    out: dict[str, dict[str, str]] = {}
    for user_group, rules in _object(value, "user group → {rule: description}").items():
        _group_name(user_group, repr(user_group[:GROUP_NAME_MAX]))
        if not isinstance(rules, dict):
            raise ValueError(f"{user_group}: expected an object of \"+:group\" / \"-:group\" → description")
        inner: dict[str, str] = {}
        for rule, desc in rules.items():
            name = rule[2:] if rule.startswith(("+:", "-:")) else rule
            _group_name(name, f"{user_group}.{rule[:GROUP_NAME_MAX]}")
            if not isinstance(desc, str) or len(desc) > DESCRIPTION_MAX or "\x00" in desc:
                raise ValueError(f"{user_group}.{rule}: the description is a text of at most {DESCRIPTION_MAX} "
                                 "characters")
            inner[rule] = desc
        out[user_group] = inner
    return out


def auto_groups(value: str) -> list[str]:
    """``AutoGroups``: a JSON array of distinct group names, in the order they are tried."""
    if not value.strip():
        return []
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON array of group names") from None
    if not isinstance(parsed, list) or len(parsed) > MAX_AUTO_GROUPS:
        raise ValueError(f"expected a JSON array of at most {MAX_AUTO_GROUPS} group names")
    groups: list[str] = []
    for n, name in enumerate(parsed, 1):
        _group_name(name, f"item {n}")
        if name == AUTO or name in groups:
            raise ValueError(f"item {n}: {name!r} is {AUTO!r} or listed twice")
        groups.append(name)
    return groups


def usable_groups(base: Mapping[str, str], special: Mapping[str, Mapping[str, str]],
                  user_group: str) -> dict[str, str]:
    """new-api's ``GetUserUsableGroups``: ``base`` (``UserUsableGroups``) adjusted by the
    user group's special rules, plus the user's own group."""
    groups = dict(base)
    if user_group:
        for rule, desc in special.get(user_group, {}).items():
            if rule.startswith("-:"):
                groups.pop(rule[2:], None)
            elif rule.startswith("+:"):
                groups[rule[2:]] = desc
            else:
                groups[rule] = desc
        groups.setdefault(user_group, OWN_GROUP)
    return groups
