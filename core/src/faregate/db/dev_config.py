"""Tortoise CLI config for writing new migrations (developers only):

    python -m tortoise -c faregate.db.dev_config.TORTOISE_ORM makemigrations
"""

TORTOISE_ORM = {
    "connections": {"default": "sqlite://:memory:"},
    "apps": {"faregate": {"models": ["faregate.db.models"], "migrations": "faregate.db.migrations",
                          "default_connection": "default"}},
    "use_tz": False,
}
