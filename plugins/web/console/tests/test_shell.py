"""The page shell: every console path answers it with a strict policy; assets are served
with it too; paths outside the console stay the gateway's own. The console's scripts call
only operations of the OpenAPI document (and the spec's playground route)."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from faregate_web.testing import Web
from faregate_web.testing.calls import Call, console_calls


def test_every_page_path_answers_the_shell_with_a_strict_policy(web: Web) -> None:
    for path in ("/", "/login", "/console", "/console/token", "/setup"):
        resp = httpx.get(web.base_url + path)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
        csp = resp.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self' 'sha256-" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp and "frame-ancestors 'none'" in csp
        assert "img-src 'self' data:;" in csp  # another image origin only for WeChat's QR code, when on
        assert resp.headers["x-content-type-options"] == "nosniff"
    asset = httpx.get(web.base_url + "/assets/app.js")
    assert asset.status_code == 200 and "javascript" in asset.headers["content-type"]
    assert "content-security-policy" in asset.headers


def test_assets_do_not_leave_their_folder(web: Web) -> None:
    for path in ("/assets/../site.py", "/assets/%2e%2e/site.py", "/assets/vendor/marked.esm.js.map",
                 "/assets/nope.js"):
        assert httpx.get(web.base_url + path).status_code == 404, path


def test_the_api_and_the_relay_keep_their_answers(web: Web) -> None:
    assert httpx.get(web.base_url + "/api/nothing").status_code == 404
    resp = httpx.get(web.base_url + "/v1/models")
    assert resp.status_code == 401 and "error" in resp.json()


def test_the_first_page_is_in_the_browser_s_language(web: Web, browser) -> None:  # type: ignore[no-untyped-def]
    ctx = browser.new_context(base_url=web.base_url, locale="zh-CN")
    try:
        page: Page = ctx.new_page()
        page.goto("/login")
        expect(page.get_by_role("heading", name="登录")).to_be_visible()
        page.get_by_label("语言").select_option("en")
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    finally:
        ctx.close()


def test_every_page_speaks_english_and_chinese_in_full(web: Web, page: Page) -> None:
    from faregate_web.site import STATIC

    modules = ["lib/strings.js"] + sorted(str(p.relative_to(STATIC)) for p in (STATIC / "pages").rglob("*.js"))
    page.goto("/about")
    expect(page.get_by_role("heading", name="About")).to_be_visible()
    gaps = page.evaluate("""async modules => {
        const gaps = {}
        for (const name of modules) {
            const m = await import('/assets/' + name)
            if (!m.strings) continue
            const en = Object.keys(m.strings.en || {}), zh = Object.keys(m.strings['zh-CN'] || {})
            const missing = en.filter(k => !zh.includes(k)).concat(zh.filter(k => !en.includes(k)))
            const blank = en.filter(k => !m.strings.en[k] || (zh.includes(k) && !m.strings['zh-CN'][k]))
            if (missing.length || blank.length || !en.length) gaps[name] = { missing, blank }
        }
        return gaps
    }""", modules)
    assert gaps == {}, gaps


def _documented(doc: dict, call: Call) -> bool:  # type: ignore[type-arg]
    """``call`` is an operation of the document: same method, each path segment the same
    or a parameter (``{…}`` in the document, ``{}`` where the script fills it in)."""
    wanted = call.path.split("/")
    for template, operations in doc["paths"].items():
        parts = template.split("/")
        if call.method.lower() in operations and len(parts) == len(wanted) and all(
                a == b or a.startswith("{") or "{}" in b for a, b in zip(parts, wanted, strict=True)):
            return True
    return False


def test_the_console_calls_only_documented_routes(web: Web) -> None:
    from faregate_web.site import STATIC

    calls, problems = console_calls(STATIC)
    assert not problems, "\n".join(problems)
    assert len({(c.method, c.path) for c in calls}) > 100  # the reader found the console's calls
    doc = httpx.get(web.base_url + "/api/openapi.json").json()
    strays = sorted(f"{c.method} {c.path} ({c.where})" for c in calls
                    if c.path.startswith("/api/") and not _documented(doc, c))
    assert not strays, "the console calls routes the OpenAPI document does not have:\n" + "\n".join(strays)
    # outside /api, only the spec's playground route (the relay's, not the management API's)
    assert {(c.method, c.path) for c in calls if not c.path.startswith("/api/")} == {("POST", "/pg/chat/completions")}
