"""A plugin's own tables, as a plugin would ship them (``register_db_models``): the
storage conformance suite migrates and uses them on every engine, and the hook's
test registers them. Two migrations, so an upgrade path is exercised too."""

from faregate.contracts import DbModels

APP = "faregate_example"

EXAMPLE_TABLES = DbModels(app=APP, models="faregate.testing.example_tables.models",
                          migrations="faregate.testing.example_tables.migrations")

__all__ = ["APP", "EXAMPLE_TABLES"]
