"""Test helpers for Faregate: fake upstreams, schema validators."""
