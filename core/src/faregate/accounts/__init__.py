"""Operator actions on accounts and keys, shared by the management API and the CLI
(``faregate admin …``) and the new-api importer, so each rule lives once."""
