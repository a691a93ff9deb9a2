"""Bringing another gateway's data into Faregate: ``faregate import new-api --from DSN``.

:mod:`.source` reads the other database (SQLite, MySQL/MariaDB or PostgreSQL, read only),
:mod:`.rows` declares what each of new-api's tables may hold and turns a row into
Faregate's columns, :mod:`.run` copies them in, keeping ids, and reports what it did.
"""
