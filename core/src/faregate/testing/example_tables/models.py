"""The example plugin's tables: payment-order-like rows (big amounts, unique external
ids, Unicode text) owned by the plugin, not the core."""

from __future__ import annotations

from tortoise import fields
from tortoise.models import Model


class ExampleOrder(Model):
    id = fields.IntField(primary_key=True)
    trade_no = fields.CharField(max_length=64, unique=True)
    user_id = fields.IntField(db_index=True)
    amount = fields.BigIntField(default=0)
    status = fields.CharField(max_length=16, default="pending")
    note = fields.TextField(default="")
    # added by migration 0002
    currency = fields.CharField(max_length=8, default="USD")

    class Meta:
        app = "faregate_example"
        table = "faregate_example_orders"
