from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise import fields
from tortoise.indexes import Index
from tortoise.migrations.schema_editor.base import BaseSchemaEditor
from tortoise.migrations.schema_generator.state import State

class DropFieldIndex(ops.AlterField):
    """An AlterField whose only change is ``db_index=True`` -> False: the field's own index is
    dropped by name and nothing else is touched. (Hand-written: tortoise's SQLite AlterField
    copies the whole table to do it, minutes on a large log table, and the copy loses the
    table's other single-column indexes, created_at's among them.)"""

    async def database_forward(self, app_label: str, old_state: State, new_state: State,
                               state_editor: BaseSchemaEditor | None = None) -> None:
        if state_editor:
            model = old_state.apps.get_model(f"{app_label}.{self.model_name}")
            await state_editor.remove_index(model, Index(fields=(self.name,)))

    async def database_backward(self, app_label: str, old_state: State, new_state: State,
                                state_editor: BaseSchemaEditor | None = None) -> None:
        if state_editor:
            model = new_state.apps.get_model(f"{app_label}.{self.model_name}")
            await state_editor.add_index(model, Index(fields=(self.name,)))


class Migration(migrations.Migration):
    dependencies = [('faregate', '0003_models_vendors_invites')]

    initial = False

    # the single-column indexes become the first column of (column, created_at) ones
    operations = [
        DropFieldIndex(
            model_name='Log',
            name='model_name',
            field=fields.CharField(default='', max_length=255),
        ),
        DropFieldIndex(
            model_name='Log',
            name='type',
            field=fields.IntField(),
        ),
        DropFieldIndex(
            model_name='Log',
            name='user_id',
            field=fields.IntField(),
        ),
        DropFieldIndex(
            model_name='Log',
            name='username',
            field=fields.CharField(default='', max_length=64),
        ),
        ops.AddIndex(
            model_name='Log',
            index=Index(fields=['user_id', 'created_at'], name='idx_logs_user_time'),
        ),
        ops.AddIndex(
            model_name='Log',
            index=Index(fields=['username', 'created_at'], name='idx_logs_username_time'),
        ),
        ops.AddIndex(
            model_name='Log',
            index=Index(fields=['token_name', 'created_at'], name='idx_logs_token_time'),
        ),
        ops.AddIndex(
            model_name='Log',
            index=Index(fields=['model_name', 'created_at'], name='idx_logs_model_time'),
        ),
        ops.AddIndex(
            model_name='Log',
            index=Index(fields=['channel_id', 'created_at'], name='idx_logs_channel_time'),
        ),
        ops.AddIndex(
            model_name='Log',
            index=Index(fields=['type', 'created_at', 'quota'], name='idx_logs_type_time_quota'),
        ),
    ]
