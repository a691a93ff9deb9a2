from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields
from tortoise.indexes import Index

class Migration(migrations.Migration):
    dependencies = [('faregate', '0010_console_tables')]

    initial = False

    operations = [
        ops.AddField(
            model_name='QuotaLease',
            name='wanted',
            field=fields.BooleanField(default=False, db_default=False),
        ),
        ops.AddIndex(
            model_name='QuotaLease',
            index=Index(fields=['kind', 'ref_id'], name='idx_quota_leases_balance'),
        ),
    ]
