from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0012_key_limits')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Worker',
            name='flushed',
            field=fields.BigIntField(default=0, db_default=0),
        ),
    ]
