from tortoise import fields, migrations
from tortoise.migrations import operations as ops


class Migration(migrations.Migration):
    dependencies = [('faregate_example', '0001_initial')]

    operations = [
        ops.AddField(
            model_name='ExampleOrder',
            name='currency',
            field=fields.CharField(default='USD', max_length=8),
        ),
    ]
