"""The adapter kit: what most channel plugins are made of, so a provider declares its
vendor's differences and writes only its conversions."""

from faregate.kit.http_json import HttpJsonProvider, join_url, malformed_response

__all__ = ["HttpJsonProvider", "join_url", "malformed_response"]
