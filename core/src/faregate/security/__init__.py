"""Secrets: encryption at rest, password hashing, key generation, log redaction."""
