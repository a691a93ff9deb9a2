"""Every HTML page the gateway serves runs only its own scripts under a Content-Security-Policy
with ``frame-ancestors`` (issue 26, H6: ``/api/docs`` loaded Swagger UI from a CDN without an
integrity hash, with no policy and no frame protection, on the console's origin).

The walk below asks every GET route the app registers (the core's and every installed
plugin's), its path parameters filled in, and checks each HTML answer; that ``/api/docs``
renders in a real browser with no policy violation is tests/security/test_api_docs_in_browser.py."""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable
from typing import Any

import httpx
from quart import Blueprint, Response

from faregate import hookimpl
from faregate.edge.page_policy import BASELINE
from faregate.plugins import load_plugins
from faregate.testing.harness import GatewayServer

#: a value for each path parameter name the routes use (anything else gets "x")
SAMPLES = {"provider": "github", "model": "gpt-4o-mini", "id": "1", "name": "swagger-ui.css"}


def _paths(gateway: GatewayServer) -> list[str]:
    paths = set()
    for rule in gateway.app.url_map.iter_rules():
        if rule.websocket or "GET" not in (rule.methods or ()):
            continue
        path = rule.rule
        for argument in rule.arguments:
            path = re.sub(rf"<(?:[a-z]+:)?{argument}>", SAMPLES.get(argument, "x"), path)
        paths.add(path)
    return sorted(paths)


def _directives(csp: str) -> dict[str, str]:
    return dict((part.strip().split(" ", 1) + [""])[:2] for part in csp.split(";") if part.strip())


def _check_page(path: str, resp: httpx.Response) -> None:
    csp = resp.headers.get("content-security-policy")
    assert csp, f"{path}: an HTML answer without a Content-Security-Policy"
    directives = _directives(csp)
    assert directives.get("frame-ancestors") == "'none'", (path, csp)
    assert resp.headers.get("x-frame-options") == "DENY" and resp.headers.get("x-content-type-options") == "nosniff"
    scripts = directives.get("script-src", directives.get("default-src", ""))
    assert "unsafe" not in scripts and "*" not in scripts and "http" not in scripts and "data:" not in scripts, (
        path, csp)
    assert directives.get("base-uri") == "'none'", (path, csp)
    for attributes, body in re.findall(r"<script\b([^>]*)>(.*?)</script>", resp.text, re.S | re.I):
        src = re.search(r"""\bsrc=["']?([^"' >]+)""", attributes)
        if src:  # a file of this origin: a relative or absolute path, never another host
            assert not re.match(r"(?i)([a-z][a-z0-9+.-]*:|//)", src.group(1)), (path, src.group(1))
        else:  # inline: only what the policy names by its hash (the console's import map)
            digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
            assert f"'sha256-{digest}'" in scripts, (path, body[:80])


async def test_every_html_page_has_a_policy_and_runs_only_its_own_scripts(gateway: GatewayServer) -> None:
    html_pages = []
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=60) as http:
        for path in _paths(gateway):
            resp = await http.get(path)
            if resp.headers.get("content-type", "").startswith("text/html"):
                _check_page(path, resp)
                html_pages.append(path)
    # the walk found the pages it is about (the web console's, when its plugin is installed)
    assert "/api/docs" in html_pages
    if "/console/<path:rest>" in {rule.rule for rule in gateway.app.url_map.iter_rules()}:
        assert "/" in html_pages and "/console/x" in html_pages


async def test_the_docs_page_is_served_by_the_gateway_itself(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        page = await http.get("/api/docs")
        assert page.status_code == 200
        sources = re.findall(r"""<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)\"""", page.text)
        assert sources and all(source.startswith("docs/assets/") for source in sources), sources
        for source in sources:
            asset = await http.get(f"/api/{source}")
            assert asset.status_code == 200 and len(asset.content) > 0, source
        for other in ("swagger-editor-bundle.js", "..%2f..%2fopenapi.json", "index.html", ".hidden"):
            assert (await http.get(f"/api/docs/assets/{other}")).status_code == 404, other
        assert "/api/docs" not in (await http.get("/api/openapi.json")).json()["paths"]


async def test_an_html_answer_without_a_policy_gets_the_baseline(make_gateway: Any) -> None:
    """A plugin page that sets no policy (or a library's HTML) runs nothing and cannot be framed."""
    blueprint = Blueprint("hooktest_html", __name__)

    @blueprint.get("/page")
    async def page() -> Response:
        return Response("<p>hi</p><script>alert(1)</script>", content_type="text/html; charset=utf-8")

    @blueprint.get("/own")
    async def own() -> Response:
        return Response("<p>own</p>", content_type="text/html",
                        headers={"Content-Security-Policy": "default-src 'self'"})

    class HtmlPlugin:
        __name__ = "hooktest-html"

        @hookimpl
        def register_routes(self, register: Callable[..., None]) -> None:
            register(blueprint, url_prefix="/hooktest")

    server = await make_gateway(plugins=load_plugins(allow=[], extra=[HtmlPlugin()]))
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        bare = await http.get("/hooktest/page")
        assert bare.headers["content-security-policy"] == BASELINE
        assert bare.headers["x-frame-options"] == "DENY" and bare.headers["x-content-type-options"] == "nosniff"
        kept = await http.get("/hooktest/own")
        assert kept.headers["content-security-policy"] == "default-src 'self'"  # a page's own policy stays
        relay = await http.get("/api/status")
        assert "content-security-policy" not in relay.headers  # JSON answers are not pages
