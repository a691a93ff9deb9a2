"""The one HTML document every page path answers with, and the security headers of
everything this plugin serves.

The import map must sit inline in the document (browsers load no import map from a
file), so the policy allows exactly that script by its hash; every other script is a
file from this origin. No inline script, no inline style, no eval: model output that gets
past the Markdown sanitizer still cannot run. Images come from this origin, ``data:``, and
the one origin an operator configured an image at (the WeChat official account's QR code)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from urllib.parse import urlsplit

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


#: a scheme and host (a name, IPv4 or bracketed IPv6) with an optional port, and nothing a
#: policy could read as another source or directive
_ORIGIN = re.compile(r"https?://(?:[a-z0-9.\-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?")


@dataclass(frozen=True)
class Shell:
    html: bytes
    import_map_hash: str

    @property
    def csp(self) -> str:
        return policy(self.import_map_hash)


@lru_cache(maxsize=64)
def image_origin(url: str) -> str | None:
    """The origin of an absolute http(s) image URL, for the policy's ``img-src``; None for
    a path on this site, another scheme, or anything that is not a plain origin."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc:
        return None
    origin = f"{parts.scheme}://{parts.netloc}".lower()
    return origin if _ORIGIN.fullmatch(origin) else None


def policy(import_map_hash: str, image_origins: tuple[str, ...] = ()) -> str:
    return "; ".join([
        "default-src 'none'",
        f"script-src 'self' 'sha256-{import_map_hash}'",
        "style-src 'self'",
        " ".join(["img-src 'self' data:", *image_origins]),
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
    return Shell(html=html.encode(), import_map_hash=digest)


def security_headers(csp: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cross-Origin-Opener-Policy": "same-origin",
        "X-Frame-Options": "DENY",
    }
