"""The plugin's tables: each user's TOTP secret (encrypted at rest, as channel keys are) with
its replay and lockout state, and the backup codes (keyed hashes only)."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from faregate.api import DbModels

APP = "auth_totp"
#: the tables and their migrations, as ``register_db_models`` hands them over
TABLES = DbModels(app=APP, models="faregate_auth_totp.models", migrations="faregate_auth_totp.migrations")


class TotpSecret(Model):
    """One per user: pending between setup and enable, then enabled. ``last_step`` is the
    newest 30-second step a code was accepted for: that step and older ones are refused,
    so a code seen over a shoulder or in a log cannot be played again."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(unique=True)
    secret_enc = fields.TextField()
    enabled = fields.BooleanField(default=False)
    last_step = fields.BigIntField(default=0)
    failed_attempts = fields.IntField(default=0)
    locked_until = fields.BigIntField(default=0)
    created_at = fields.BigIntField(default=0)
    last_used_at = fields.BigIntField(default=0)

    class Meta:
        app = APP
        table = "auth_totp_secrets"


class TotpBackupCode(Model):
    """A single-use backup code, as a keyed hash bound to its user."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(db_index=True)
    code_hash = fields.CharField(max_length=64, unique=True)
    used_at = fields.BigIntField(default=0)

    class Meta:
        app = APP
        table = "auth_totp_backup_codes"
