from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0006_accounts')]

    initial = False

    operations = [
        ops.CreateModel(
            name='QuotaWarning',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(unique=True)),
                ('remaining', fields.BigIntField(default=0)),
                ('threshold', fields.BigIntField(default=0)),
                ('created_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'quota_warnings', 'app': 'faregate', 'pk_attr': 'id', 'table_description': 'A quota warning sent to a user, kept until their quota rises above the threshold.'},
            bases=['Model'],
        ),
    ]
