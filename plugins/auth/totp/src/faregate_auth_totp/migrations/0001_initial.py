from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='TotpSecret',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(unique=True)),
                ('secret_enc', fields.TextField(unique=False)),
                ('enabled', fields.BooleanField(default=False)),
                ('last_step', fields.BigIntField(default=0)),
                ('failed_attempts', fields.IntField(default=0)),
                ('locked_until', fields.BigIntField(default=0)),
                ('created_at', fields.BigIntField(default=0)),
                ('last_used_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'auth_totp_secrets', 'app': 'auth_totp', 'pk_attr': 'id',
                     'table_description': ('One per user: pending between setup and enable, then enabled. '
                                           '``last_step`` is the')},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='TotpBackupCode',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(db_index=True)),
                ('code_hash', fields.CharField(unique=True, max_length=64)),
                ('used_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'auth_totp_backup_codes', 'app': 'auth_totp', 'pk_attr': 'id',
                     'table_description': 'A single-use backup code, as a keyed hash bound to its user.'},
            bases=['Model'],
        ),
    ]
