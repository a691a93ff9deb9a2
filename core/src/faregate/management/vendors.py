"""(placeholder)"""

from __future__ import annotations

from quart import Blueprint

blueprint = Blueprint("vendors", __name__)
