from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0008_quota_warnings')]

    initial = False

    operations = [
        ops.AddField(
            model_name='TopUp',
            name='currency',
            field=fields.CharField(default='', description='ISO 4217 code of ``money``, which a paid event must name too (empty on imported rows)', db_default='', max_length=8),
        ),
        ops.AddField(
            model_name='TopUp',
            name='quota',
            field=fields.BigIntField(default=0, description='the quota credited when the order completes, fixed when it is made (0 on imported rows)', db_default=0),
        ),
    ]
