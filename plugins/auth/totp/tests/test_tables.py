"""The plugin's tables match their migrations (a model change needs its migration)."""

from faregate.testing.tables import pending_migrations
from faregate_auth_totp.models import TABLES


async def test_models_match_migrations() -> None:
    assert await pending_migrations(TABLES) == []
