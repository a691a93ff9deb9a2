from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    initial = True

    operations = [
        ops.CreateModel(
            name='ExampleOrder',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('trade_no', fields.CharField(unique=True, max_length=64)),
                ('user_id', fields.IntField(db_index=True)),
                ('amount', fields.BigIntField(default=0)),
                ('status', fields.CharField(default='pending', max_length=16)),
                ('note', fields.TextField(default='', unique=False)),
            ],
            options={'table': 'faregate_example_orders', 'app': 'faregate_example', 'pk_attr': 'id'},
            bases=['Model'],
        ),
    ]
