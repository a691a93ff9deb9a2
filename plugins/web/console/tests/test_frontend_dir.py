"""FAREGATE_FRONTEND_DIR: an operator's built front end (new-api's web/dist) served in place of
the console, as new-api's server serves it: files at /, index.html for any other page path,
hashed assets cached for good, the API and the relay keeping their own answers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from faregate.testing.harness import GatewayProcess

INDEX = b"""<!doctype html><html><head><script>window.__boot = 1</script>
<script type="module" crossorigin src="/assets/index-Bx9_a1Zq.js"></script></head>
<body><div id="root"></div></body></html>"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    root = tmp_path_factory.mktemp("frontend")
    dist = root / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_bytes(INDEX)
    (dist / "assets" / "index-Bx9_a1Zq.js").write_text("console.log('app')")
    (dist / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "secret.txt").write_text("outside")
    (dist / ".env").write_text("outside")  # a stray dotfile in the build is not served either
    proc = GatewayProcess(str(root / "data"), env={"FAREGATE_FRONTEND_DIR": str(dist)})
    proc.start()
    yield proc
    proc.stop()


def test_page_paths_answer_the_app_s_index(built: GatewayProcess) -> None:
    for path in ("/", "/console", "/console/token", "/login", "/setup", "/some/deep/page"):
        resp = httpx.get(built.base_url + path)
        assert resp.status_code == 200, path
        assert resp.content == INDEX and resp.headers["content-type"].startswith("text/html")
        assert resp.headers["cache-control"] == "no-cache"
        csp = resp.headers["content-security-policy"]
        assert "unsafe-eval" not in csp and "frame-ancestors 'none'" in csp and "connect-src 'self'" in csp
        assert "'sha256-" in csp  # the inline boot script, allowed by its hash only


def test_files_are_served_and_hashed_assets_cached_for_good(built: GatewayProcess) -> None:
    asset = httpx.get(built.base_url + "/assets/index-Bx9_a1Zq.js")
    assert asset.status_code == 200 and asset.text == "console.log('app')"
    assert "immutable" in asset.headers["cache-control"]
    logo = httpx.get(built.base_url + "/logo.png")
    assert logo.status_code == 200 and logo.headers["cache-control"] == "no-cache"


def test_missing_assets_and_escapes_are_not_found(built: GatewayProcess) -> None:
    for path in ("/assets/index-gone.js", "/stale.js", "/assets/app.css"):
        assert httpx.get(built.base_url + path).status_code == 404, path
    for path in ("/assets/../../secret.txt", "/%2e%2e/secret.txt", "/..%2fsecret.txt", "/.%2e/.%2e/secret.txt",
                 "/.env"):
        resp = httpx.get(built.base_url + path)
        assert b"outside" not in resp.content, path  # the index or a 404, never a file outside


def test_the_api_and_the_relay_keep_their_answers(built: GatewayProcess) -> None:
    nothing = httpx.get(built.base_url + "/api/nothing")
    assert nothing.status_code == 404 and nothing.json()["success"] is False
    assert httpx.post(built.base_url + "/api/nothing").status_code == 404
    assert httpx.get(built.base_url + "/api/status").json()["success"] is True
    models = httpx.get(built.base_url + "/v1/models")
    assert models.status_code == 401 and "error" in models.json()
    assert httpx.get(built.base_url + "/v1/nothing").status_code == 404


def test_faregate_s_console_is_not_served(built: GatewayProcess) -> None:
    assert httpx.get(built.base_url + "/assets/app.js").status_code == 404


def test_a_directory_without_index_html_stops_the_start(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = GatewayProcess(str(tmp_path / "data"), env={"FAREGATE_FRONTEND_DIR": str(empty)})
    with pytest.raises(RuntimeError, match="index.html"):
        proc.start()
