"""The one HTML document every page path answers with, and the security headers of
everything this plugin serves.

The import map must sit inline in the document (browsers load no import map from a
file), so the policy allows exactly that script by its hash; every other script is a
file from this origin. No inline script, no inline style, no eval: model output that gets
past the Markdown sanitizer still cannot run."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from functools import cache

ASSETS = "/assets"

#: bare module names the pages import, resolved to the vendored files
IMPORTS = {
    "preact": f"{ASSETS}/vendor/preact.module.js",
    "preact/hooks": f"{ASSETS}/vendor/preact-hooks.module.js",
    "htm": f"{ASSETS}/vendor/htm.module.js",
    "preact-iso/router": f"{ASSETS}/vendor/preact-iso-router.js",
    "preact-iso/lazy": f"{ASSETS}/vendor/preact-iso-lazy.js",
    "marked": f"{ASSETS}/vendor/marked.esm.js",
    "dompurify": f"{ASSETS}/vendor/purify.es.mjs",
    "uplot": f"{ASSETS}/vendor/uPlot.esm.js",
}


@dataclass(frozen=True)
class Shell:
    html: bytes
    csp: str


def _policy(import_map_hash: str) -> str:
    return "; ".join([
        "default-src 'none'",
        f"script-src 'self' 'sha256-{import_map_hash}'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ])


@cache
def shell() -> Shell:
    import_map = json.dumps({"imports": IMPORTS}, separators=(",", ":"))
    digest = base64.b64encode(hashlib.sha256(import_map.encode()).digest()).decode()
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Faregate</title>
<link rel="icon" href="{ASSETS}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="{ASSETS}/vendor/uPlot.min.css">
<link rel="stylesheet" href="{ASSETS}/style.css">
<script type="importmap">{import_map}</script>
<script type="module" src="{ASSETS}/app.js"></script>
</head>
<body>
<div id="app"><noscript>Faregate's console needs JavaScript. The API works without it.</noscript></div>
</body>
</html>
"""
    return Shell(html=html.encode(), csp=_policy(digest))


def security_headers(csp: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "X-Frame-Options": "DENY",
    }
