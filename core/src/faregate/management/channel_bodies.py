"""The declared bodies and answers of adding and updating a channel. A body is checked on
the way in (a 400 naming the field) before :func:`~faregate.management.channel_rules.check_channel`
looks at what the values mean. new-api's web UI sends its whole form on add and the whole
channel it loaded on update, so the read-only columns and the form's own fields are
declared, accepted and ignored; anything else is refused as a typo."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, ValidationError

from faregate import jsonutil
from faregate.management.common import INT32_MAX, BadInput
from faregate.management.openapi import INT64, Body, Page, RowId, Shape, describe
from faregate.state.snapshot import split_list

MODEL_NAME_MAX = 255  # abilities.model
GROUP_NAME_MAX = 64  # abilities.group
#: a TEXT column the UI echoes back but we do not keep: bounded, as it is never stored
ECHO_MAX = 65_536


def _joined(value: Any) -> Any:
    # the UI sends comma-separated text; a list of names is a convenience for API clients
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ValueError("must be a comma-separated string or a list of strings")
        return ",".join(v.strip() for v in value)
    return value


def _names_within(limit: int, what: str) -> Callable[[str], str]:
    # each name becomes an abilities row, whose column is shorter than the channel's
    def check(value: str) -> str:
        for name in split_list(value):
            if len(name) > limit:
                raise ValueError(f"{what} name too long: {name[:40]}…")
        return value

    return check


def _object_text(value: Any) -> Any:
    if isinstance(value, dict):
        try:
            return jsonutil.dumps_str(value)
        except (TypeError, ValueError):  # an integer past 64 bits, say
            raise ValueError("cannot be stored as JSON") from None
    return value


def _json_object(value: str) -> str:
    if value:
        try:
            parsed = jsonutil.loads(value)
        except jsonutil.JSONDecodeError:
            raise ValueError("not valid JSON") from None
        if not isinstance(parsed, dict):
            raise ValueError("must be a JSON object")
    return value


def _bool_as_int(value: Any) -> Any:
    # the UI sends 0/1; true/false is a convenience. A Literal would also take 1.0
    if isinstance(value, float):
        raise ValueError("must be 0 or 1")
    return int(value) if isinstance(value, bool) else value


Models = Annotated[str, BeforeValidator(_joined, json_schema_input_type=str | list[str]),
                   AfterValidator(_names_within(MODEL_NAME_MAX, "model")),
                   Field(description="comma-separated model names, or a list of them")]
Groups = Annotated[str, BeforeValidator(_joined, json_schema_input_type=str | list[str]), Field(max_length=255),
                   AfterValidator(_names_within(GROUP_NAME_MAX, "group")),
                   Field(description="comma-separated group names, or a list of them")]
#: stored as text; an object is accepted and stored as its JSON text, "" clears the column
JsonObject = Annotated[str, BeforeValidator(_object_text, json_schema_input_type=str | dict[str, Any]),
                       AfterValidator(_json_object), Field(description="a JSON object, or its text")]
AutoBan = Annotated[Literal[0, 1], BeforeValidator(_bool_as_int, json_schema_input_type=Literal[0, 1] | bool)]
Echo = Annotated[str, Field(max_length=ECHO_MAX)]
KeyRotation = Literal["random", "polling", ""]

#: integer columns: null leaves them unchanged
INT_COLUMNS = ("type", "status", "weight", "priority", "auto_ban")
#: text columns a null or "" sets to NULL
NULLABLE_COLUMNS = ("tag", "test_model", "openai_organization")
TEXT_COLUMNS = ("name", "base_url", "other", "models", "group", "model_mapping", "status_code_mapping", "setting",
                "settings", "param_override", "header_override", "remark", *NULLABLE_COLUMNS)


class ChannelFields(Body):
    """A channel's writable columns; an absent one is left as it is (on update) or takes its
    default (on add); null clears a text column. ``key`` is handled by the route."""

    type: Annotated[int, Field(ge=0, le=INT32_MAX, description="new-api's channel type number")] | None = None
    key: str | None = Field(default=None, description="one key; one a line in batch and multi_to_single mode; "
                                                       "empty on update: keep the stored key")
    name: Annotated[str, Field(max_length=128)] | None = None
    status: Annotated[int, Field(ge=0, le=3, description="1 enabled, 2 manually, 3 automatically disabled")] \
        | None = None
    weight: Annotated[int, Field(ge=0, le=INT32_MAX)] | None = None
    priority: INT64 | None = None
    base_url: Annotated[str, Field(max_length=512)] | None = None
    other: str | None = None
    models: Models | None = None
    group: Groups | None = None
    model_mapping: JsonObject | None = None
    status_code_mapping: JsonObject | None = None
    setting: JsonObject | None = Field(default=None, description=(
        "channel settings; the relay reads proxy (an http, https, socks4 or socks5 URL, user:password@ allowed, "
        "listed masked), system_prompt (text) and system_prompt_override (boolean), force_convert …"))
    param_override: JsonObject | None = Field(default=None, description=(
        "new-api's parameter override: an object merged into every upstream body, or {operations: [{mode, path, "
        "value, from, to, keep_origin, conditions: [{path, mode, value, invert, pass_missing_key}], logic}]} "
        "(docs/management-api.md lists the modes and bounds)"))
    header_override: JsonObject | None = Field(default=None, description=(
        "headers set on every upstream request: {api_key} and {client_header:Name} placeholders, \"*\" or "
        "\"re:<regex>\" keys pass the caller's headers through (never its credentials or cookies)"))
    settings: Annotated[JsonObject, Field(max_length=ECHO_MAX)] | None = Field(default=None, description=(
        "new-api's \"other settings\", kept beside setting as its console stores them: a key's format "
        "(vertex_key_type json|api_key, aws_key_type ak_sk|api_key), azure_responses_version, the upstream "
        "model-update check (upstream_model_update_*) …; providers read setting and settings as one object, "
        "these keys winning"))
    auto_ban: AutoBan | None = None
    remark: Annotated[str, Field(max_length=255)] | None = None
    tag: Annotated[str, Field(max_length=128)] | None = None
    test_model: Annotated[str, Field(max_length=255)] | None = None
    openai_organization: Annotated[str, Field(max_length=128)] | None = None
    multi_key_mode: KeyRotation | None = Field(default=None, description="a multi-key channel's rotation (update; "
                                                                         "the add route reads the outer one)")
    # new-api's columns and the UI's form fields that are not written here: accepted, ignored
    created_time: INT64 | None = None
    test_time: INT64 | None = None
    response_time: INT64 | None = None
    balance: float | None = None
    balance_updated_time: INT64 | None = None
    used_quota: INT64 | None = None
    need_reconcile: INT64 | None = None
    other_info: Echo | None = None
    channel_info: dict[str, Any] | Echo | None = Field(default=None, description="ignored: the key routes keep it")
    groups: Annotated[list[Annotated[str, Field(max_length=255)]], Field(max_length=1000)] | None = None
    max_input_tokens: INT64 | None = None
    token_limit: INT64 | None = None
    azure_responses_version: Annotated[str, Field(max_length=255)] | None = None
    region: Echo | None = None

    def columns(self) -> dict[str, Any]:
        """The columns this body writes, as stored."""
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if name in INT_COLUMNS:
                if value is not None:
                    out[name] = value
            elif name in NULLABLE_COLUMNS:
                out[name] = value or None
            elif name in TEXT_COLUMNS:
                out[name] = "" if value is None else value
        return out


class NewChannel(ChannelFields):
    """The channel of an add."""

    id: INT64 | None = Field(default=None, description="ignored")


class ChannelAdd(NewChannel):
    """``{mode, multi_key_mode, batch_add_set_key_prefix_2_name, channel}``; the channel's
    fields may also stand at the top level, without ``channel``."""

    mode: Literal["single", "batch", "multi_to_single", ""] | None = Field(
        default=None, description="single (the default): one channel; batch: one channel per key line; "
                                  "multi_to_single: one channel holding every key")
    batch_add_set_key_prefix_2_name: bool | None = Field(
        default=None, description="batch: name each channel after its key's first 8 characters")
    channel: NewChannel | None = None

    def new_channel(self) -> NewChannel:
        return self.channel if self.channel is not None else self


class ChannelUpdate(ChannelFields):
    """Partial: absent fields keep their value, an empty ``key`` keeps the stored one."""

    id: RowId
    key_mode: Literal["append", "replace", ""] | None = Field(
        default=None, description="a multi-key channel: add the keys sent to the stored ones, or replace them "
                                  "(the default)")


def channel_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The columns in ``data`` checked as a channel body's (for the routes that take some of
    them by other names, as the tag edit); :class:`BadInput` (400) names a bad one."""
    try:
        return ChannelFields.model_validate(data).columns()
    except ValidationError as err:
        raise BadInput(describe(err), status=400) from None


# -- answers ---------------------------------------------------------------------------------
class ChannelInfoView(Shape):
    is_multi_key: bool
    multi_key_size: int
    multi_key_status_list: dict[str, int] | None
    multi_key_polling_index: int
    multi_key_mode: str


class ChannelView(Shape):
    """A channel; ``key`` is always ``""`` (new-api omits the column)."""

    id: int
    type: int
    key: str
    name: str
    status: int
    weight: int
    priority: int
    base_url: str
    models: str
    group: str
    model_mapping: str
    status_code_mapping: str
    auto_ban: int
    tag: str | None
    setting: str
    settings: str = Field(description="new-api's \"other settings\" JSON text, as stored (\"\": none)")
    param_override: str
    header_override: str
    other: str
    test_model: str | None
    openai_organization: str | None
    created_time: int
    test_time: int
    response_time: int
    balance: float
    balance_updated_time: int
    used_quota: int
    remark: str
    channel_info: ChannelInfoView


class ChannelPage(Page[ChannelView]):
    type_counts: dict[str, int] = Field(description="type → channels, counted with the status filter but not the "
                                                    "type filter (the UI's type tabs)")
