"""(placeholder)"""

from __future__ import annotations

from quart import Blueprint

blueprint = Blueprint("channel_keys", __name__)
