"""Persistence: tortoise-orm models, storage backends and migrations."""
