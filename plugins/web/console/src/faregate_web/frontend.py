"""An operator's own built front end (``FAREGATE_FRONTEND_DIR``) served in place of the console,
as new-api's server serves its ``web/dist``: the directory's files at ``/``, ``index.html`` for
every other page path (the single-page app routes itself), the API and the relay untouched.

It is a hook on unmatched requests, not a catch-all route: a catch-all rule would turn an
unknown ``POST /api/...`` into a 405 and shadow nothing else, while this only sees a GET that
no route took, so every route of the gateway and every 404/405 answer stays what it was.

The built app is not ours: it was compiled with inline scripts and styles we cannot list in
advance, so the policy is looser than the console's (``'unsafe-inline'`` styles, the inline
scripts of ``index.html`` allowed by hash, images from any https origin for operator logos)
but still forbids eval, framing and other origins for scripts and API calls."""

from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from quart import Blueprint, Response, request, send_from_directory
from werkzeug.exceptions import NotFound

from faregate.api import skip_on_relay
from faregate_web.shell import security_headers

#: where the gateway answers and the front end must never be served, even for a GET no route
#: took (a missing API path keeps its JSON 404): new-api's own list plus Faregate's prefixes
RESERVED = ("/api", "/v1", "/v1beta", "/pg", "/mj", "/suno", "/kling", "/jimeng", "/metrics",
            "/healthz", "/readyz", "/dashboard")

#: a bundler's content-hashed file (``index-3f9a1c2b.js``, ``logo.B2x_Yd8Q.png``): its name
#: changes with its content, so it may be cached for good
_HASHED = re.compile(r"[.-][A-Za-z0-9_-]{8,}\.[a-z0-9]+$")

_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)


@dataclass(frozen=True)
class Frontend:
    root: Path
    index: bytes
    csp: str
    #: every file's path under root (``assets/index-3f9a1c2b.js``), listed once at start: a
    #: request is served only by an exact name from this set, never by a path it builds
    files: frozenset[str]


def _reserved(path: str) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in RESERVED)


def frontend_policy(index_html: bytes) -> str:
    hashes = []
    for body in _INLINE_SCRIPT.findall(index_html):
        if body.strip():
            hashes.append("'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'")
    return "; ".join([
        "default-src 'self'",
        " ".join(["script-src 'self'", *hashes]),
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob: https:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "base-uri 'self'",
        "form-action 'self' https:",  # an Epay top-up posts its signed form to the payment site
        "frame-ancestors 'none'",
        "object-src 'none'",
    ])


@cache
def load(directory: str) -> Frontend:
    """The built app, read once at start (restart after a rebuild, as new-api's embedded build
    needs): a missing ``index.html`` stops the gateway at start, not at the first visitor."""
    root = Path(directory).resolve()
    index_path = root / "index.html"
    if not index_path.is_file():
        raise RuntimeError(f"FAREGATE_FRONTEND_DIR={directory}: no index.html there (point it at the built dist)")
    index = index_path.read_bytes()
    names = (path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file())
    files = frozenset(name for name in names if not any(part.startswith(".") for part in name.split("/")))
    return Frontend(root=root, index=index, csp=frontend_policy(index), files=files)


def make_frontend_blueprint(directory: str) -> Blueprint:
    frontend = load(directory)
    blueprint = Blueprint("frontend", __name__)

    @blueprint.before_app_request
    @skip_on_relay  # answers only where no route matched: never on a relay route
    async def serve_unmatched() -> Response | None:
        if not isinstance(request.routing_exception, NotFound) or request.method not in ("GET", "HEAD"):
            return None
        path = request.path
        if _reserved(path):
            return None
        name = path.lstrip("/")
        if name in frontend.files:
            response = await send_from_directory(frontend.root, name)
            immutable = name.startswith("assets/") and _HASHED.search(name) is not None
            response.headers["Cache-Control"] = "public, max-age=31536000, immutable" if immutable else "no-cache"
        elif name.startswith("assets/") or name.endswith((".js", ".css", ".map")):
            return None  # a missing asset is a 404, not the page (a stale tab must not parse HTML as JS)
        else:
            response = Response(frontend.index, content_type="text/html; charset=utf-8")
            response.headers["Cache-Control"] = "no-cache"
        response.headers.update(security_headers(frontend.csp))
        return response

    return blueprint
