"""The routes: the page shell on every path the console's router knows, and the static
assets (revalidated by ETag on every load, so an upgrade is seen at once)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from quart import Blueprint, Response, abort, send_from_directory

from faregate.api import Services
from faregate_web.shell import ASSETS, image_origin, policy, security_headers, shell

STATIC = Path(str(resources.files("faregate_web") / "static"))

#: the paths the page router (static/app.js) draws; anything else stays the gateway's 404.
#: /oauth/<provider> is new-api's OAuth callback page (and Telegram's return address)
PAGE_PATHS = ("/", "/login", "/register", "/setup", "/reset", "/user/reset", "/pricing", "/about",
              "/oauth/<provider>", "/console", "/console/<path:rest>")


def make_blueprint(services: Services) -> Blueprint:
    blueprint = Blueprint("web", __name__)

    def image_origins() -> tuple[str, ...]:
        """Where the pages may load an image from besides this site: the WeChat official
        account's QR code the sign-in dialog shows, when WeChat login is on."""
        values = services.options.values
        if values.get("WeChatAuthEnabled") is not True:
            return ()
        origin = image_origin(str(values.get("WeChatAccountQRCodeImageURL") or ""))
        return (origin,) if origin else ()

    async def page(rest: str = "", provider: str = "") -> Response:
        doc = shell()
        response = Response(doc.html, content_type="text/html; charset=utf-8")
        response.headers.update(security_headers(policy(doc.import_map_hash, image_origins())))
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
