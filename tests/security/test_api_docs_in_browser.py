"""``/api/docs`` renders in Debian's Chromium under its policy with no violation and no error
(issue 26, H6): Swagger UI from the gateway's own files, its one script of ours a file, its
"Try it out" calls to this origin allowed. Any Content-Security-Policy violation is a console
error in Chromium, so the test fails on one. Playwright never downloads a browser here:
``FAREGATE_CHROMIUM`` or /usr/bin/chromium (``./dev test`` installs it)."""

from __future__ import annotations

import os
import shutil

import pytest
from playwright.async_api import ConsoleMessage, async_playwright

from faregate.testing.harness import GatewayServer

CHROMIUM = os.environ.get("FAREGATE_CHROMIUM", "/usr/bin/chromium")
FOUND = shutil.which(CHROMIUM) is not None or os.path.exists(CHROMIUM)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


async def test_api_docs_render_and_call_the_api_with_no_policy_violation(gateway: GatewayServer) -> None:
    if not FOUND:
        pytest.fail(f"Chromium is not at {CHROMIUM}: apt-get install -y chromium (or set FAREGATE_CHROMIUM)")
    problems: list[str] = []
    requested: list[str] = []

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            problems.append(f"console {message.type}: {message.text}")

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(60_000)  # a loaded machine parses Swagger UI's 1.5 MB slowly
            page.on("console", console)
            page.on("pageerror", lambda exc: problems.append(f"uncaught: {exc}"))
            page.on("request", lambda request: requested.append(request.url))
            await page.goto(f"{gateway.base_url}/api/docs")
            status = page.locator(".opblock", has=page.locator(".opblock-summary-path", has_text="/api/status"))
            await status.first.locator(".opblock-summary").click()
            await status.first.get_by_role("button", name="Try it out").click()
            await status.first.get_by_role("button", name="Execute").click()
            await status.first.locator(".live-responses-table .response-col_status", has_text="200").wait_for()
            assert await page.locator(".opblock").count() > 50  # the whole management API is listed
        finally:
            await browser.close()
    assert not problems, "\n".join(problems)
    assert requested and all(url.startswith(gateway.base_url) for url in requested), requested
