from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0001_initial')]

    initial = False

    operations = [
        ops.CreateModel(
            name='Redemption',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(default=0)),
                ('key', fields.CharField(unique=True, max_length=32)),
                ('status', fields.IntField(default=1, db_index=True)),
                ('name', fields.CharField(default='', max_length=64)),
                ('quota', fields.BigIntField(default=0)),
                ('created_time', fields.BigIntField(default=0)),
                ('redeemed_time', fields.BigIntField(default=0)),
                ('used_user_id', fields.IntField(default=0)),
                ('expired_time', fields.BigIntField(default=0)),
            ],
            options={'table': 'redemptions', 'app': 'faregate', 'pk_attr': 'id', 'table_description': "A redemption code (new-api's): ``quota`` credited once to whoever redeems ``key``."},
            bases=['Model'],
        ),
    ]
