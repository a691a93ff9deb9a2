"""What each of new-api's tables may hold, declared and bounded, and the Faregate columns
a row becomes. A row that breaks a bound is not stored: its table's report names the row
and the field (new-api's UI validates less than its columns allow, so such rows exist).

new-api's columns are read by name (``SELECT *``), and columns a version lacks take
their defaults: one schema serves one-api and every new-api version since."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from faregate import jsonutil
from faregate.db import models as m
from faregate.management.channel_bodies import channel_fields
from faregate.management.common import BadInput
from faregate.management.openapi import describe
from faregate.security.crypto import key_hash
from faregate.state.multi_keys import read_info

INT64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
COUNT = Annotated[int, Field(ge=0, le=2**63 - 1)]
SECONDS = Annotated[int, Field(ge=-1, le=2**63 - 1)]


class Rejected(Exception):
    """A source row that cannot be stored; the message names the field."""


def _text(value: Any) -> Any:
    return "" if value is None else value


def _flag(value: Any) -> Any:
    # SQLite and MySQL hold booleans as 0/1
    return bool(value) if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1) else value


Text = Annotated[str, BeforeValidator(_text)]
Flag = Annotated[bool, BeforeValidator(_flag)]


# text columns of at most n characters (NULL reads as "")
Str16 = Annotated[str, BeforeValidator(_text), Field(max_length=16)]
Str32 = Annotated[str, BeforeValidator(_text), Field(max_length=32)]
Str50 = Annotated[str, BeforeValidator(_text), Field(max_length=50)]
Str64 = Annotated[str, BeforeValidator(_text), Field(max_length=64)]
Str128 = Annotated[str, BeforeValidator(_text), Field(max_length=128)]
Str255 = Annotated[str, BeforeValidator(_text), Field(max_length=255)]


class SourceRow(BaseModel):
    # columns of other versions or of features Faregate keeps elsewhere are ignored
    model_config = ConfigDict(extra="ignore")

    @classmethod
    def read(cls, row: dict[str, Any]) -> Any:
        try:
            return cls.model_validate({k: v for k, v in row.items() if v is not None})
        except ValidationError as err:
            raise Rejected(describe(err)) from None


# ---- users ----------------------------------------------------------------------------------
class NewApiUser(SourceRow):
    id: Annotated[int, Field(ge=1, le=2**31 - 1)]
    username: Annotated[str, Field(min_length=1, max_length=64)]
    password: Str255 = ""  # bcrypt: verified at login, then rehashed as argon2id
    display_name: Str64 = ""
    role: Literal[0, 1, 10, 100] = 1  # common user
    status: Literal[1, 2] = 1  # enabled
    email: Str128 = ""
    access_token: Str64 = ""
    quota: INT64 = 0
    used_quota: INT64 = 0
    request_count: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    group: Str64 = "default"
    aff_code: Str32 = ""
    aff_count: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    aff_quota: INT64 = 0
    aff_history: INT64 = 0
    inviter_id: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    remark: Str255 = ""
    setting: Text = ""
    created_at: INT64 = 0
    deleted_at: Any = None

    def columns(self) -> dict[str, Any]:
        return {
            "id": self.id, "username": self.username, "password_hash": self.password,
            "display_name": self.display_name, "role": self.role, "status": self.status, "email": self.email,
            # kept hashed, as Faregate keeps the access tokens it issues: scripts keep working
            "access_token": key_hash(self.access_token) if self.access_token else None,
            "quota": self.quota, "used_quota": self.used_quota, "request_count": self.request_count,
            "group": self.group or "default", "aff_code": self.aff_code or None, "aff_count": self.aff_count,
            "aff_quota": self.aff_quota, "aff_history": self.aff_history, "inviter_id": self.inviter_id,
            "remark": self.remark, "setting": self.setting, "created_at": self.created_at,
        }


# ---- tokens (relay keys) --------------------------------------------------------------------
class NewApiToken(SourceRow):
    id: Annotated[int, Field(ge=1, le=2**31 - 1)]
    user_id: Annotated[int, Field(ge=0, le=2**31 - 1)]
    key: Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")]
    status: Literal[1, 2, 3, 4] = 1  # enabled
    name: Str64 = ""
    created_time: INT64 = 0
    accessed_time: INT64 = 0
    expired_time: SECONDS = -1
    remain_quota: INT64 = 0
    unlimited_quota: Flag = False
    used_quota: INT64 = 0
    model_limits_enabled: Flag = False
    model_limits: Annotated[str, BeforeValidator(_text), Field(max_length=65_536)] = ""
    allow_ips: Annotated[str, BeforeValidator(_text), Field(max_length=65_536)] = ""
    group: Str64 = ""
    cross_group_retry: Flag = False
    deleted_at: Any = None

    def secret(self) -> str:
        """The key as clients send it, without ``sk-`` (new-api stores it so)."""
        return self.key.removeprefix("sk-")

    def columns(self) -> dict[str, Any]:
        return {
            "id": self.id, "user_id": self.user_id, "status": self.status, "name": self.name,
            "created_time": self.created_time, "accessed_time": self.accessed_time,
            "expired_time": self.expired_time, "remain_quota": self.remain_quota,
            "unlimited_quota": self.unlimited_quota, "used_quota": self.used_quota,
            "model_limits_enabled": self.model_limits_enabled, "model_limits": self.model_limits,
            "allow_ips": self.allow_ips, "group": self.group, "cross_group_retry": self.cross_group_retry,
        }


# ---- channels -------------------------------------------------------------------------------
CHANNEL_TEXT = ("name", "base_url", "other", "models", "group", "model_mapping", "status_code_mapping", "setting",
                "param_override", "header_override", "remark", "tag", "test_model")


def channel_columns(row: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A channel's columns, checked by the same rules as the channel API, and its key text
    (one key, a key a line, or a JSON array of service-account keys)."""
    body: dict[str, Any] = {name: row[name] for name in CHANNEL_TEXT if isinstance(row.get(name), str)}
    for name in ("type", "status", "weight", "priority", "auto_ban"):
        if row.get(name) is not None:
            body[name] = int(row[name])
    organization = row.get("openai_organization", row.get("open_ai_organization"))
    if isinstance(organization, str):
        body["openai_organization"] = organization
    try:
        columns = channel_fields(body)
    except BadInput as exc:
        raise Rejected(str(exc)) from None
    try:
        channel_id = int(row["id"])
        extra: dict[str, Any] = {
            "id": channel_id,
            "created_time": int(row.get("created_time") or 0), "test_time": int(row.get("test_time") or 0),
            "response_time": int(row.get("response_time") or 0), "balance": float(row.get("balance") or 0),
            "balance_updated_time": int(row.get("balance_updated_time") or 0),
            "used_quota": int(row.get("used_quota") or 0),
        }
    except (TypeError, ValueError, KeyError) as exc:
        raise Rejected(f"a number column: {exc}") from None
    if not 1 <= channel_id < 2**31:
        raise Rejected("id: out of range")
    info = row.get("channel_info")
    if isinstance(info, dict):
        info = jsonutil.dumps_str(info)
    extra["channel_info"] = jsonutil.dumps_str(read_info(info)) if info else ""
    key = row.get("key")
    if not isinstance(key, str) or not key.strip():
        raise Rejected("key: the channel has no key")
    return {**columns, **extra}, key.strip()


# ---- abilities (the routing index) ----------------------------------------------------------
class NewApiAbility(SourceRow):
    group: Annotated[str, Field(min_length=1, max_length=64)]
    model: Annotated[str, Field(min_length=1, max_length=255)]
    channel_id: Annotated[int, Field(ge=1, le=2**31 - 1)]
    enabled: Flag = True
    priority: INT64 = 0
    weight: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    tag: Annotated[str | None, Field(max_length=128)] = None

    def columns(self) -> dict[str, Any]:
        return {"group": self.group, "model": self.model, "channel_id": self.channel_id, "enabled": self.enabled,
                "priority": self.priority, "weight": self.weight, "tag": self.tag or None}


# ---- redemption codes -----------------------------------------------------------------------
class NewApiRedemption(SourceRow):
    id: Annotated[int, Field(ge=1, le=2**31 - 1)]
    user_id: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    key: Annotated[str, Field(min_length=1, max_length=32)]
    status: Literal[1, 2, 3] = 1  # enabled
    name: Str64 = ""
    quota: INT64 = 0
    created_time: INT64 = 0
    redeemed_time: INT64 = 0
    used_user_id: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    expired_time: INT64 = 0
    deleted_at: Any = None

    def columns(self) -> dict[str, Any]:
        return self.model_dump(exclude={"deleted_at"})


# ---- top-ups --------------------------------------------------------------------------------
def _decimal(value: Any) -> Any:
    if isinstance(value, float | int | str) and not isinstance(value, bool):
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return value
    return value


class NewApiTopUp(SourceRow):
    id: Annotated[int, Field(ge=1, le=2**31 - 1)]
    user_id: Annotated[int, Field(ge=0, le=2**31 - 1)]
    amount: INT64 = 0
    money: Annotated[Decimal, BeforeValidator(_decimal),
                     Field(ge=Decimal("-1e14"), le=Decimal("1e14"), max_digits=20, decimal_places=6)] = Decimal(0)
    trade_no: Annotated[str, Field(min_length=1, max_length=255)]
    payment_method: Str50 = ""
    payment_provider: Str50 = ""
    create_time: INT64 = 0
    complete_time: INT64 = 0
    status: Str16 = m.TOPUP_PENDING

    def columns(self) -> dict[str, Any]:
        return self.model_dump()


# ---- logs -----------------------------------------------------------------------------------
class NewApiLog(SourceRow):
    id: Annotated[int, Field(ge=1, le=2**31 - 1)]
    user_id: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    created_at: INT64 = 0
    type: Annotated[int, Field(ge=0, le=100)] = 0
    content: Text = ""
    username: Str64 = ""
    token_name: Str64 = ""
    model_name: Str255 = ""
    quota: INT64 = 0
    prompt_tokens: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    completion_tokens: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    use_time: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    is_stream: Flag = False
    channel_id: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    token_id: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    group: Str64 = ""
    ip: Str64 = ""
    request_id: Str64 = ""
    other: Text = ""

    def columns(self) -> dict[str, Any]:
        values = self.model_dump()
        values["request_id"] = self.request_id or None
        return values
