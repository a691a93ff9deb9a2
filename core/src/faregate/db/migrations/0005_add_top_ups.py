from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0004_log_indexes')]

    initial = False

    operations = [
        ops.CreateModel(
            name='TopUp',
            fields=[
                ('id', fields.IntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ('user_id', fields.IntField(db_index=True)),
                ('amount', fields.BigIntField(default=0)),
                ('money', fields.DecimalField(default=0, max_digits=20, decimal_places=6)),
                ('trade_no', fields.CharField(unique=True, max_length=255)),
                ('payment_method', fields.CharField(default='', max_length=50)),
                ('payment_provider', fields.CharField(default='', max_length=50)),
                ('create_time', fields.BigIntField(default=0)),
                ('complete_time', fields.BigIntField(default=0)),
                ('status', fields.CharField(default='pending', max_length=16)),
            ],
            options={'table': 'top_ups', 'app': 'faregate', 'pk_attr': 'id', 'table_description': "A payment order, as new-api's top_ups table."},
            bases=['Model'],
        ),
    ]
