"""``GET /api/docs``: the management API's OpenAPI document (``/api/openapi.json``) rendered by
Swagger UI, served from the gateway itself: its files come from the ``swagger-ui-py``
distribution (Swagger UI's own dist), the page's one script of ours is a file too, and the
page runs under a policy that allows scripts from this origin only, no inline script or
style, no framing. (quart-schema's page loaded Swagger UI from a CDN without an integrity
hash, with no policy, on the console's origin: issue 26, H6.)"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from quart import Quart, Response, abort, send_from_directory

from faregate.edge.page_policy import page_headers
from faregate.management.common import public

DOCS_PATH = "/api/docs"
ASSETS_PATH = f"{DOCS_PATH}/assets"
#: the page's policy: this origin's scripts, styles and images (Swagger UI's icons are data:
#: URIs in its stylesheet); its requests (the document, "Try it out") go to this origin only
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
          "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
#: Swagger UI's files the page uses, served as the distribution ships them
SWAGGER_FILES = frozenset({"swagger-ui-bundle.js", "swagger-ui.css", "favicon-32x32.png"})
OWN_DIR = Path(__file__).with_name("docs_assets")
OWN_FILES = frozenset({"api-docs.js", "api-docs.css"})

#: relative URLs: the page works behind a proxy that mounts the gateway under a path
PAGE = b"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Faregate management API</title>
<link rel="icon" href="docs/assets/favicon-32x32.png" type="image/png">
<link rel="stylesheet" href="docs/assets/swagger-ui.css">
<link rel="stylesheet" href="docs/assets/api-docs.css">
<script src="docs/assets/swagger-ui-bundle.js" defer></script>
<script src="docs/assets/api-docs.js" defer></script>
</head>
<body>
<div id="swagger-ui"><noscript>This page renders /api/openapi.json with JavaScript.</noscript></div>
</body>
</html>
"""


def swagger_dir() -> Path:
    """Swagger UI's dist files, where the ``swagger-ui-py`` distribution installed them
    (found by its metadata: its package would import its framework handlers for nothing)."""
    return Path(str(importlib.metadata.distribution("swagger-ui-py").locate_file("swagger_ui/static")))


def install(app: Quart) -> None:
    static = swagger_dir()

    @public
    async def docs_page() -> Response:
        response = Response(PAGE, content_type="text/html; charset=utf-8")
        response.headers.update(page_headers(POLICY))
        response.headers["Cache-Control"] = "no-cache"
        return response

    @public
    async def docs_asset(name: str) -> Response:
        if name in SWAGGER_FILES:
            response = await send_from_directory(static, name)
        elif name in OWN_FILES:
            response = await send_from_directory(OWN_DIR, name)
        else:
            abort(404)
        response.headers.update(page_headers(POLICY))
        response.headers["Cache-Control"] = "no-cache"  # revalidated by ETag: an upgrade is seen at once
        return response

    app.add_url_rule(DOCS_PATH, "api_docs", docs_page, methods=["GET"])
    app.add_url_rule(f"{ASSETS_PATH}/<name>", "api_docs_asset", docs_asset, methods=["GET"])
