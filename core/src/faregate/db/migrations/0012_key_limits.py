from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields

class Migration(migrations.Migration):
    dependencies = [('faregate', '0011_lease_wanted')]

    initial = False

    operations = [
        ops.AddField(
            model_name='Token',
            name='rpm_limit',
            field=fields.IntField(default=0, db_default=0),
        ),
        ops.AddField(
            model_name='Token',
            name='tpm_limit',
            field=fields.BigIntField(default=0, db_default=0),
        ),
        ops.AddField(
            model_name='Token',
            name='max_parallel_requests',
            field=fields.IntField(default=0, db_default=0),
        ),
    ]
