"""The plugin's table: one passkey per user (as new-api), found by its credential id at
login; ``sign_count`` is the authenticator's counter as last seen."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model

from faregate.api import DbModels

APP = "auth_passkeys"
#: the tables and their migrations, as ``register_db_models`` hands them over
TABLES = DbModels(app=APP, models="faregate_auth_passkeys.models", migrations="faregate_auth_passkeys.migrations")


class PasskeyCredential(Model):
    """A user's passkey: its public key (COSE) and the counter it last reported."""

    id = fields.IntField(primary_key=True)
    user_id = fields.IntField(unique=True)
    credential_id = fields.CharField(max_length=255, unique=True)  # base64url
    public_key = fields.TextField()  # base64url of the COSE key
    sign_count = fields.BigIntField(default=0)
    aaguid = fields.CharField(max_length=36, default="")
    transports = fields.CharField(max_length=255, default="")
    backup_eligible = fields.BooleanField(default=False)
    backup_state = fields.BooleanField(default=False)
    created_at = fields.BigIntField(default=0)
    last_used_at = fields.BigIntField(default=0)

    class Meta:
        app = APP
        table = "auth_passkey_credentials"
