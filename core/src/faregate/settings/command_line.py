"""What every command needs before any setting is resolved: the variables' prefix, the
error a bad setting stops with, and the values the command line set. Kept free of
pydantic (which :mod:`.resolve` needs) so that ``faregate --version`` and ``--help``
start without it."""

from __future__ import annotations

import os
from collections.abc import Mapping

ENV_PREFIX = "FAREGATE_"


class SettingError(ValueError):
    """A setting that does not validate: the start stops with this one line."""


#: ``FAREGATE_<NAME>`` variables this process set from its command line: name → (value, flag)
_FROM_COMMAND_LINE: dict[str, tuple[str, str]] = {}


def set_from_command_line(env_name: str, value: str, flag: str) -> None:
    """Set ``env_name`` for a command-line ``flag`` (so worker processes see it too) and
    remember that it came from there: its origin reads ``command line <flag>``, not
    ``env …``, while the variable still holds that value."""
    os.environ[env_name] = value
    _FROM_COMMAND_LINE[env_name] = (value, flag)


def env_origin(env_name: str, env: Mapping[str, str]) -> str:
    """Where ``env_name``'s value came from: the command line's flag while the variable still
    holds what the flag set, else the environment."""
    given = _FROM_COMMAND_LINE.get(env_name)
    return f"command line {given[1]}" if given is not None and given[0] == env.get(env_name) else f"env {env_name}"
