from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0002_add_redemptions')]

    initial = False

    operations = [
        ops.CreateModel(
            name='ModelMeta',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('model_name', fields.CharField(unique=True, max_length=255)),
                ('description', fields.TextField(default='', unique=False)),
                ('icon', fields.CharField(default='', max_length=128)),
                ('tags', fields.CharField(default='', max_length=255)),
                ('vendor_id', fields.IntField(default=0, db_index=True)),
                ('endpoints', fields.TextField(default='', unique=False)),
                ('status', fields.IntField(default=1)),
                ('sync_official', fields.IntField(default=1)),
                ('name_rule', fields.IntField(default=0)),
                ('created_time', fields.BigIntField(default=0)),
                ('updated_time', fields.BigIntField(default=0)),
            ],
            options={'table': 'models', 'app': 'faregate', 'pk_attr': 'id', 'table_description': "Model metadata (new-api's ``models`` table): what the pricing page and the console"},
            bases=['Model'],
        ),
        ops.CreateModel(
            name='Vendor',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('name', fields.CharField(unique=True, max_length=128)),
                ('description', fields.TextField(default='', unique=False)),
                ('icon', fields.CharField(default='', max_length=128)),
                ('status', fields.IntField(default=1)),
                ('created_time', fields.BigIntField(default=0)),
                ('updated_time', fields.BigIntField(default=0)),
            ],
            options={'table': 'vendors', 'app': 'faregate', 'pk_attr': 'id', 'table_description': "Who makes a model (new-api's vendors): shown beside model metadata."},
            bases=['Model'],
        ),
        ops.AddField(
            model_name='Channel',
            name='channel_info',
            field=fields.TextField(default='', db_default='', description="multi-key state as new-api's channel_info JSON: {multi_key_mode, multi_key_status_list…}", unique=False),
        ),
        ops.AddField(
            model_name='User',
            name='aff_count',
            field=fields.IntField(default=0, db_default=0),
        ),
        ops.AddField(
            model_name='User',
            name='aff_history',
            field=fields.BigIntField(default=0, db_default=0),
        ),
        ops.AddField(
            model_name='User',
            name='aff_quota',
            field=fields.BigIntField(default=0, db_default=0),
        ),
        ops.AddField(
            model_name='User',
            name='inviter_id',
            field=fields.IntField(default=0, db_default=0),
        ),
    ]
