from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('faregate', '0005_add_top_ups')]

    initial = False

    operations = [
        ops.CreateModel(
            name='AuthFlow',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('purpose', fields.CharField(max_length=32)),
                ('subject', fields.CharField(default='', description='what the secret is for when the caller names it (an email address): one live row each', max_length=255)),
                ('secret_hash', fields.CharField(unique=True, max_length=64)),
                ('user_id', fields.IntField(default=0)),
                ('payload', fields.TextField(default='', unique=False)),
                ('attempts', fields.IntField(default=0)),
                ('expires_at', fields.BigIntField(db_index=True)),
                ('created_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'auth_flows', 'app': 'faregate', 'indexes': [Index(fields=['purpose', 'subject'], name='idx_auth_flows_purpose_subject')], 'pk_attr': 'id', 'table_description': 'A one-time secret of a sign-in flow: a pending two-factor login, an email code, a'},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='UserBinding',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(db_index=True)),
                ('provider', fields.CharField(max_length=32)),
                ('subject', fields.CharField(max_length=255)),
                ('created_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'user_bindings', 'app': 'faregate', 'unique_together': (('provider', 'subject'), ('user_id', 'provider')), 'pk_attr': 'id', 'table_description': "An outside identity bound to a user (new-api's github_id, discord_id, oidc_id,"},
            bases=['Model'],
        ),
        ops.AddField(
            model_name='User',
            name='session_version',
            field=fields.IntField(default=0, description='bumped when the password or the role changes or an admin removes a second factor: a', db_default=0),
        ),
    ]
