"""new-api's ``token_setting.*``: the rules for the API keys users create."""

from __future__ import annotations

from faregate.db import models as m
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec
from faregate.state.options import Options

MAX_USER_TOKENS = "token_setting.max_user_tokens"

TOKEN_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(MAX_USER_TOKENS, "1000", "The most API keys one user may have (creating one more is refused; "
               "existing ones stay).", specs.integer(0, 1_000_000)),
)


def too_many_keys_message(limit: int) -> str:
    """new-api's refusal, word for word (its console shows it as it is)."""
    return f"已达到最大令牌数量限制 ({limit})"


async def key_cap_refusal(options: Options, user_id: int) -> str | None:
    """Why ``user_id`` may not have one more key (new-api's ``token_setting.max_user_tokens``),
    or None: the one rule the key API and ``faregate admin create-key`` both apply."""
    limit = int(options.value(MAX_USER_TOKENS))
    if await m.Token.filter(user_id=user_id).count() >= limit:
        return too_many_keys_message(limit)
    return None
