"""The web console's walls (faregate-web), from the catalogue's side: every page and asset
carries a Content-Security-Policy with no inline script but the import map (by its hash),
no inline style, no eval, no framing; assets never leave their folder. That hostile model
output is shown as text and never runs is checked in a real browser by
plugins/web/console/tests/test_hostile_output.py."""

from __future__ import annotations

import base64
import hashlib
import re

import httpx

from faregate.testing.harness import GatewayServer


async def test_pages_allow_only_their_own_scripts(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for path in ("/", "/login", "/console", "/console/channel", "/console/anything/deeper"):
            resp = await http.get(path)
            assert resp.status_code == 200, path
            csp = resp.headers["content-security-policy"]
            directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
            assert directives["default-src"] == "'none'"
            assert directives["style-src"] == "'self'" and directives["connect-src"] == "'self'"
            assert directives["frame-ancestors"] == "'none'" and directives["base-uri"] == "'none'"
            assert "unsafe" not in csp and "*" not in csp
            inline = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", resp.text, re.S)
            assert len(inline) == 1  # the import map, nothing else
            digest = base64.b64encode(hashlib.sha256(inline[0].encode()).digest()).decode()
            assert directives["script-src"] == f"'self' 'sha256-{digest}'"
            assert " style=" not in resp.text and " on" not in resp.text.replace(" one", "")
            assert resp.headers["x-frame-options"] == "DENY" and resp.headers["x-content-type-options"] == "nosniff"


async def test_assets_stay_in_their_folder(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/assets/app.js")).status_code == 200
        for path in ("/assets/../__init__.py", "/assets/..%2f__init__.py", "/assets/%2e%2e/site.py",
                     "/assets//etc/passwd", "/assets/vendor/purify.es.mjs.map", "/assets/.hidden"):
            assert (await http.get(path, follow_redirects=True)).status_code == 404, path
