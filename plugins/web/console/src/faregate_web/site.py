"""The routes: the page shell on every path the console's router knows, and the static
assets (revalidated by ETag on every load, so an upgrade is seen at once)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from quart import Blueprint, Response, abort, send_from_directory

from faregate_web.shell import ASSETS, security_headers, shell

STATIC = Path(str(resources.files("faregate_web") / "static"))

#: the paths the page router (static/app.js) draws; anything else stays the gateway's 404
PAGE_PATHS = ("/", "/login", "/register", "/setup", "/reset", "/user/reset", "/pricing", "/about",
              "/console", "/console/<path:rest>")


def make_blueprint() -> Blueprint:
    blueprint = Blueprint("web", __name__)

    async def page(rest: str = "") -> Response:
        doc = shell()
        response = Response(doc.html, content_type="text/html; charset=utf-8")
        response.headers.update(security_headers(doc.csp))
        response.headers["Cache-Control"] = "no-cache"
        return response

    for path in PAGE_PATHS:
        blueprint.add_url_rule(path, f"page{path}", page, methods=["GET"])

    @blueprint.get(f"{ASSETS}/<path:name>")
    async def asset(name: str) -> Response:
        if name.endswith((".map", ".py")) or name.startswith("."):
            abort(404)
        response = await send_from_directory(STATIC, name)
        response.headers.update(security_headers(shell().csp))
        response.headers["Cache-Control"] = "no-cache"
        return response

    return blueprint
