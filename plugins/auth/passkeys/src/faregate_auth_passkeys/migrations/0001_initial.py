from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='PasskeyCredential',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(unique=True)),
                ('credential_id', fields.CharField(unique=True, max_length=255)),
                ('public_key', fields.TextField(unique=False)),
                ('sign_count', fields.BigIntField(default=0)),
                ('aaguid', fields.CharField(default='', max_length=36)),
                ('transports', fields.CharField(default='', max_length=255)),
                ('backup_eligible', fields.BooleanField(default=False)),
                ('backup_state', fields.BooleanField(default=False)),
                ('created_at', fields.BigIntField(default=0)),
                ('last_used_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'auth_passkey_credentials', 'app': 'auth_passkeys', 'pk_attr': 'id',
                     'table_description': 'A user\'s passkey: its public key (COSE) and the counter it last reported.'},
            bases=['Model'],
        ),
    ]
