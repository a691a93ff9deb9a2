"""(placeholder)"""

from __future__ import annotations

from quart import Blueprint

blueprint = Blueprint("uptime", __name__)
