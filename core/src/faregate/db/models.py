"""The tables, with new-api's names and columns where clients see them."""

from __future__ import annotations

from tortoise import fields
from tortoise.fields.db_defaults import SqlDefault
from tortoise.indexes import Index
from tortoise.models import Model

# roles and statuses as new-api
ROLE_GUEST, ROLE_USER, ROLE_ADMIN, ROLE_ROOT = 0, 1, 10, 100
USER_ENABLED, USER_DISABLED = 1, 2
TOKEN_ENABLED, TOKEN_DISABLED, TOKEN_EXPIRED, TOKEN_EXHAUSTED = 1, 2, 3, 4
CHANNEL_ENABLED, CHANNEL_MANUALLY_DISABLED, CHANNEL_AUTO_DISABLED = 1, 2, 3
LOG_TOPUP, LOG_CONSUME, LOG_MANAGE, LOG_SYSTEM, LOG_ERROR, LOG_REFUND = 1, 2, 3, 4, 5, 6


class User(Model):
    id = fields.IntField(primary_key=True)
    username = fields.CharField(max_length=64, unique=True)
    password_hash = fields.CharField(max_length=255, default="")
    display_name = fields.CharField(max_length=64, default="")
    role = fields.IntField(default=ROLE_USER)
    status = fields.IntField(default=USER_ENABLED)
    email = fields.CharField(max_length=128, default="")
    access_token = fields.CharField(max_length=64, null=True, unique=True)
    quota = fields.BigIntField(default=0)
    used_quota = fields.BigIntField(default=0)
    request_count = fields.IntField(default=0)
    group = fields.CharField(max_length=64, default="default")
    aff_code = fields.CharField(max_length=32, null=True, unique=True)
    # columns added after the first release carry a database default: existing rows get it
    aff_count = fields.IntField(default=0, db_default=0)  # users who registered with this user's code
    aff_quota = fields.BigIntField(default=0, db_default=0)  # invitation rewards not yet moved into quota
    aff_history = fields.BigIntField(default=0, db_default=0)  # every invitation reward ever earned
    inviter_id = fields.IntField(default=0, db_default=0)
    remark = fields.CharField(max_length=255, default="")
    setting = fields.TextField(default="")
    created_at = fields.BigIntField(default=0)
    #: bumped when the password or the role changes or an admin removes a second factor: a
    #: login session carrying an older number is refused
    session_version = fields.IntField(default=0, db_default=0)

    class Meta:
        table = "users"


class Token(Model):
    """A relay API key. The key is kept as a SHA-256 hash (lookup) and encrypted
    (owner reveal); it is never stored in clear."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(db_index=True)
    key_hash = fields.CharField(max_length=64, unique=True)
    key_enc = fields.TextField()
    key_mask = fields.CharField(max_length=32)
    status = fields.IntField(default=TOKEN_ENABLED)
    name = fields.CharField(max_length=64, default="")
    created_time = fields.BigIntField(default=0)
    accessed_time = fields.BigIntField(default=0)
    expired_time = fields.BigIntField(default=-1)
    remain_quota = fields.BigIntField(default=0)
    unlimited_quota = fields.BooleanField(default=False)
    used_quota = fields.BigIntField(default=0)
    model_limits_enabled = fields.BooleanField(default=False)
    model_limits = fields.TextField(default="")
    allow_ips = fields.TextField(default="")
    group = fields.CharField(max_length=64, default="")
    cross_group_retry = fields.BooleanField(default=False)
    # the key's own rate limits (LiteLLM's names; 0: none of its own): requests and tokens per
    # minute, requests at once
    rpm_limit = fields.IntField(default=0, db_default=0)
    tpm_limit = fields.BigIntField(default=0, db_default=0)
    max_parallel_requests = fields.IntField(default=0, db_default=0)

    class Meta:
        table = "tokens"


class Channel(Model):
    id = fields.IntField(primary_key=True)
    type = fields.IntField(default=1)
    key_enc = fields.TextField(default="")
    openai_organization = fields.CharField(max_length=128, null=True)
    test_model = fields.CharField(max_length=255, null=True)
    status = fields.IntField(default=CHANNEL_ENABLED)
    name = fields.CharField(max_length=128, default="")
    weight = fields.IntField(default=0)
    created_time = fields.BigIntField(default=0)
    test_time = fields.BigIntField(default=0)
    response_time = fields.IntField(default=0)
    base_url = fields.CharField(max_length=512, default="")
    other = fields.TextField(default="")
    balance = fields.FloatField(default=0)
    balance_updated_time = fields.BigIntField(default=0)
    models = fields.TextField(default="")
    group = fields.CharField(max_length=255, default="default")
    used_quota = fields.BigIntField(default=0)
    model_mapping = fields.TextField(default="")
    status_code_mapping = fields.TextField(default="")
    priority = fields.BigIntField(default=0)
    auto_ban = fields.IntField(default=1)
    tag = fields.CharField(max_length=128, null=True)
    setting = fields.TextField(default="")
    param_override = fields.TextField(default="")
    header_override = fields.TextField(default="")
    remark = fields.CharField(max_length=255, default="")
    #: multi-key state as new-api's channel_info JSON: {multi_key_mode, multi_key_status_list…}
    channel_info = fields.TextField(default="", db_default="")
    #: new-api's "other settings" JSON, beside ``setting``: a key's format (vertex_key_type,
    #: aws_key_type), azure_responses_version, the upstream model-update check … Providers read
    #: both as one object (these keys winning), its console each as it stored it
    settings = fields.TextField(default="", db_default=SqlDefault("('')"))

    class Meta:
        table = "channels"


class Ability(Model):
    """The routing index: one row per (group, model, channel), as new-api's abilities."""

    id = fields.IntField(primary_key=True)
    group = fields.CharField(max_length=64)
    model = fields.CharField(max_length=255)
    channel_id = fields.IntField(db_index=True)
    enabled = fields.BooleanField(default=True)
    priority = fields.BigIntField(default=0)
    weight = fields.IntField(default=0)
    tag = fields.CharField(max_length=128, null=True)

    class Meta:
        table = "abilities"
        unique_together = (("group", "model", "channel_id"),)


REDEMPTION_ENABLED, REDEMPTION_DISABLED, REDEMPTION_USED = 1, 2, 3


class Redemption(Model):
    """A redemption code (new-api's): ``quota`` credited once to whoever redeems ``key``."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(default=0)  # the admin who made it
    key = fields.CharField(max_length=32, unique=True)
    status = fields.IntField(default=REDEMPTION_ENABLED, db_index=True)
    name = fields.CharField(max_length=64, default="")
    quota = fields.BigIntField(default=0)
    created_time = fields.BigIntField(default=0)
    redeemed_time = fields.BigIntField(default=0)
    used_user_id = fields.IntField(default=0)
    expired_time = fields.BigIntField(default=0)  # 0: never

    class Meta:
        table = "redemptions"


TOPUP_PENDING, TOPUP_SUCCESS, TOPUP_FAILED, TOPUP_EXPIRED = "pending", "success", "failed", "expired"


class TopUp(Model):
    """A payment order, as new-api's top_ups table.

    ``amount`` units bought for ``money``. ``trade_no`` is the payment's own reference,
    unique so that a webhook credits once. (The first line becomes the table's comment:
    tortoise's SQLite migrations split statements on semicolons, so it has none.)"""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(db_index=True)
    amount = fields.BigIntField(default=0)
    money = fields.DecimalField(max_digits=20, decimal_places=6, default=0)
    trade_no = fields.CharField(max_length=255, unique=True)
    payment_method = fields.CharField(max_length=50, default="")
    payment_provider = fields.CharField(max_length=50, default="")
    create_time = fields.BigIntField(default=0)
    complete_time = fields.BigIntField(default=0)
    status = fields.CharField(max_length=16, default=TOPUP_PENDING)
    #: ISO 4217 code of ``money``, which a paid event must name too (empty on imported rows)
    currency = fields.CharField(max_length=8, default="", db_default="")
    #: the quota credited when the order completes, fixed when it is made (0 on imported rows)
    quota = fields.BigIntField(default=0, db_default=0)

    class Meta:
        table = "top_ups"


class Vendor(Model):
    """Who makes a model (new-api's vendors): shown beside model metadata."""

    id = fields.IntField(primary_key=True)
    name = fields.CharField(max_length=128, unique=True)
    description = fields.TextField(default="")
    icon = fields.CharField(max_length=128, default="")
    status = fields.IntField(default=1)
    created_time = fields.BigIntField(default=0)
    updated_time = fields.BigIntField(default=0)

    class Meta:
        table = "vendors"


class PrefillGroup(Model):
    """A named list the console offers when filling in a form (new-api's ``prefill_groups``):
    models for a channel (``type`` ``model``), tags or endpoints for a model's metadata.
    ``items`` is JSON: an array of names, or the endpoint form's object."""

    id = fields.IntField(primary_key=True)
    name = fields.CharField(max_length=64, unique=True)
    type = fields.CharField(max_length=32, db_index=True)
    items = fields.TextField(default="")
    description = fields.CharField(max_length=255, default="")
    created_time = fields.BigIntField(default=0)
    updated_time = fields.BigIntField(default=0)

    class Meta:
        table = "prefill_groups"


class ModelMeta(Model):
    """Model metadata (new-api's ``models`` table): what the pricing page and the console
    show about a model. ``name_rule`` 0 matches the name exactly, 1 as a prefix, 2 as a
    substring, 3 as a suffix."""

    id = fields.IntField(primary_key=True)
    model_name = fields.CharField(max_length=255, unique=True)
    description = fields.TextField(default="")
    icon = fields.CharField(max_length=128, default="")
    tags = fields.CharField(max_length=255, default="")
    vendor_id = fields.IntField(default=0, db_index=True)
    endpoints = fields.TextField(default="")
    status = fields.IntField(default=1)
    sync_official = fields.IntField(default=1)  # 1: an upstream sync may overwrite this row
    name_rule = fields.IntField(default=0)
    created_time = fields.BigIntField(default=0)
    updated_time = fields.BigIntField(default=0)

    class Meta:
        table = "models"


class Option(Model):
    key = fields.CharField(max_length=128, primary_key=True)
    value = fields.TextField(default="")

    class Meta:
        table = "options"


class Log(Model):
    id = fields.IntField(primary_key=True)
    user_id = fields.IntField()
    created_at = fields.BigIntField(db_index=True)
    type = fields.IntField()
    content = fields.TextField(default="")
    username = fields.CharField(max_length=64, default="")
    token_name = fields.CharField(max_length=64, default="")
    model_name = fields.CharField(max_length=255, default="")
    quota = fields.BigIntField(default=0)
    prompt_tokens = fields.IntField(default=0)
    completion_tokens = fields.IntField(default=0)
    use_time = fields.IntField(default=0)
    is_stream = fields.BooleanField(default=False)
    channel_id = fields.IntField(default=0)
    token_id = fields.IntField(default=0)
    group = fields.CharField(max_length=64, default="")
    ip = fields.CharField(max_length=64, default="")
    request_id = fields.CharField(max_length=64, null=True, unique=True)
    other = fields.TextField(default="")

    class Meta:
        table = "logs"
        # Lists are newest first (created_at, then id) with equality filters and a time range
        # (the console always sends one): (filter, created_at) serves filter, range and order
        # in one index scan, so a page reads its own rows and no more, at any table size
        # (bench/log_scale.py, docs/benchmarks.md). (type, created_at, quota) answers the
        # stat's quota sum from the index alone. group has none: a handful of values, each
        # common, so the newest rows of a group are found by reading the newest rows.
        indexes = (
            Index(fields=("user_id", "created_at"), name="idx_logs_user_time"),
            Index(fields=("username", "created_at"), name="idx_logs_username_time"),
            Index(fields=("token_name", "created_at"), name="idx_logs_token_time"),
            Index(fields=("model_name", "created_at"), name="idx_logs_model_time"),
            Index(fields=("channel_id", "created_at"), name="idx_logs_channel_time"),
            Index(fields=("type", "created_at", "quota"), name="idx_logs_type_time_quota"),
        )


class QuotaLease(Model):
    """Quota a worker has taken out of a user's or token's balance to spend from
    memory. ``held`` is what is still unspent as of the last flush; a sweeper returns
    the leases of workers whose heartbeat stopped. ``wanted``: another worker is short of
    this balance and asks the holder to give its unreserved part back at its next flush
    (which clears the mark)."""

    id = fields.IntField(primary_key=True)
    worker = fields.CharField(max_length=64, db_index=True)
    kind = fields.CharField(max_length=8)  # "user" | "token"
    ref_id = fields.IntField()
    held = fields.BigIntField(default=0)
    wanted = fields.BooleanField(default=False, db_default=False)

    class Meta:
        table = "quota_leases"
        unique_together = (("worker", "kind", "ref_id"),)
        # every lease of one balance: what all workers hold of it (shown balances, reclaiming)
        indexes = (Index(fields=("kind", "ref_id"), name="idx_quota_leases_balance"),)


class Worker(Model):
    id = fields.CharField(max_length=64, primary_key=True)
    heartbeat = fields.BigIntField(default=0)
    # the number of the worker's last committed billing flush, written by the flush itself:
    # tells whether a flush whose commit failed (the connection died around it) landed
    flushed = fields.BigIntField(default=0, db_default=0)

    class Meta:
        table = "workers"


class ChangeEvent(Model):
    """Append-only feed of cache invalidations: every worker applies rows past the
    last id it has seen."""

    id = fields.IntField(primary_key=True)
    kind = fields.CharField(max_length=16)
    ref_id = fields.IntField(default=0)
    created_at = fields.BigIntField(default=0)

    class Meta:
        table = "change_events"


class Setup(Model):
    id = fields.IntField(primary_key=True)
    version = fields.CharField(max_length=32)
    initialized_at = fields.BigIntField()

    class Meta:
        table = "setups"


class AuthFlow(Model):
    """A one-time secret of a sign-in flow: a pending two-factor login, an email code, a
    password reset link, a WebAuthn challenge. Only a keyed hash of the secret is stored;
    ``take`` deletes the row, so it is used at most once, and it is worthless after
    ``expires_at``."""

    id = fields.IntField(primary_key=True)
    purpose = fields.CharField(max_length=32)
    #: what the secret is for when the caller names it (an email address): one live row each
    subject = fields.CharField(max_length=255, default="")
    secret_hash = fields.CharField(max_length=64, unique=True)
    user_id = fields.IntField(default=0)
    payload = fields.TextField(default="")
    attempts = fields.IntField(default=0)
    expires_at = fields.BigIntField(db_index=True)
    created_at = fields.BigIntField(default=0)

    class Meta:
        table = "auth_flows"
        indexes = (Index(fields=("purpose", "subject"), name="idx_auth_flows_purpose_subject"),)


class UserBinding(Model):
    """An outside identity bound to a user (new-api's github_id, discord_id, oidc_id,
    linux_do_id, telegram_id and wechat_id columns): the provider's stable subject id,
    never an email address."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(db_index=True)
    provider = fields.CharField(max_length=32)
    subject = fields.CharField(max_length=255)
    created_at = fields.BigIntField(default=0)

    class Meta:
        table = "user_bindings"
        unique_together = (("provider", "subject"), ("user_id", "provider"))


class Checkin(Model):
    """A user's daily check-in (new-api's ``checkins``): at most one per user and day (the unique
    pair is what makes it once, however many workers take the request), with the quota it gave."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField()
    checkin_date = fields.CharField(max_length=10)  # YYYY-MM-DD, the server's local date as new-api's
    quota_awarded = fields.BigIntField(default=0)
    created_at = fields.BigIntField(default=0)

    class Meta:
        table = "checkins"
        unique_together = (("user_id", "checkin_date"),)


class QuotaWarning(Model):
    """A quota warning sent to a user, kept until their quota rises above the threshold.

    One row per user at most (``user_id`` is unique): a worker sends a warning only when
    it inserted the row, so however many workers see the balance fall, the user is warned
    once; the row is deleted when the balance is seen above the threshold again."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(unique=True)
    remaining = fields.BigIntField(default=0)
    threshold = fields.BigIntField(default=0)
    created_at = fields.BigIntField(default=0)

    class Meta:
        table = "quota_warnings"
