from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.db_defaults import SqlDefault
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0009_payments')]

    initial = False

    operations = [
        ops.CreateModel(
            name='Checkin',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField()),
                ('checkin_date', fields.CharField(max_length=10)),
                ('quota_awarded', fields.BigIntField(default=0)),
                ('created_at', fields.BigIntField(default=0)),
            ],
            options={'table': 'checkins', 'app': 'faregate', 'unique_together': (('user_id', 'checkin_date'),), 'pk_attr': 'id', 'table_description': "A user's daily check-in (new-api's ``checkins``): at most one per user and day (the unique"},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='PrefillGroup',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('name', fields.CharField(unique=True, max_length=64)),
                ('type', fields.CharField(db_index=True, max_length=32)),
                ('items', fields.TextField(default='', unique=False)),
                ('description', fields.CharField(default='', max_length=255)),
                ('created_time', fields.BigIntField(default=0)),
                ('updated_time', fields.BigIntField(default=0)),
            ],
            options={'table': 'prefill_groups', 'app': 'faregate', 'pk_attr': 'id', 'table_description': "A named list the console offers when filling in a form (new-api's ``prefill_groups``):"},
            bases=['Model'],
        ),
        ops.AddField(
            model_name='Channel',
            name='settings',
            field=fields.TextField(default='', description='new-api\'s "other settings" JSON, beside ``setting``: a key\'s format (vertex_key_type,', db_default=SqlDefault("('')"), unique=False),
        ),
    ]
