"""(placeholder)"""

from __future__ import annotations

from quart import Blueprint

blueprint = Blueprint("model_meta", __name__)
