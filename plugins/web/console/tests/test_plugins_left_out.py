"""Deployments without some plugins: a headless gateway (no faregate-web) answers ``/`` with
the gateway's 404 while its API works; a console without the 2FA and passkey plugins hides
those sections of the personal page, with no error shown and none in the browser console
(the core answers the absent plugins' routes HTTP 200 with success false)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser, expect

from faregate.testing.harness import GatewayProcess
from faregate_web.testing import ROOT_PASSWORD, PageErrors, log_in, screenshot


def _gateway(tmp_path_factory: pytest.TempPathFactory, disabled: str) -> Iterator[GatewayProcess]:
    proc = GatewayProcess(str(tmp_path_factory.mktemp("left-out") / "data"),
                          env={"FAREGATE_DISABLED_PLUGINS": disabled})
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture
def headless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from _gateway(tmp_path_factory, "faregate-web")


@pytest.fixture
def no_factors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayProcess]:
    yield from _gateway(tmp_path_factory, "faregate-auth-totp,faregate-auth-passkeys")


def test_a_headless_gateway_has_no_pages_and_keeps_its_api(headless: GatewayProcess) -> None:
    with httpx.Client(base_url=headless.base_url, timeout=30) as client:
        for path in ("/", "/console", "/login", "/console/playground", "/assets/app.js"):
            resp = client.get(path)
            assert resp.status_code == 404, (path, resp.status_code)
            assert "text/html" not in resp.headers.get("content-type", ""), path
        status = client.get("/api/status").json()
        assert status["success"] and status["data"]["setup"] is False
        setup = client.post("/api/setup", json={"username": "root", "password": ROOT_PASSWORD,
                                                "confirmPassword": ROOT_PASSWORD}).json()
        assert setup["success"], setup
        login = client.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD}).json()
        assert login["success"], login
        assert client.get("/api/openapi.json").json()["paths"]
        assert client.get("/v1/models").status_code == 401


def test_the_personal_page_hides_2fa_and_passkey_when_their_plugins_are_absent(
        no_factors: GatewayProcess, browser: Browser) -> None:
    with httpx.Client(base_url=no_factors.base_url, timeout=30) as client:
        client.post("/api/setup", json={"username": "root", "password": ROOT_PASSWORD,
                                        "confirmPassword": ROOT_PASSWORD}).raise_for_status()
        # what the console meets: the core's answer for a plugin that is not installed
        client.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD}).raise_for_status()
        missing = client.get("/api/user/2fa/status")
        assert missing.status_code == 200 and missing.json()["success"] is False
    ctx = browser.new_context(base_url=no_factors.base_url, locale="en-US", viewport={"width": 1280, "height": 800})
    try:
        page = ctx.new_page()
        page.set_default_timeout(10_000)
        errors = PageErrors(page)
        log_in(page, "root", ROOT_PASSWORD)
        page.get_by_role("link", name="Personal settings").click()
        expect(page.get_by_role("heading", name="Access token")).to_be_visible()
        page.wait_for_load_state("networkidle")
        expect(page.get_by_role("heading", name="Two-factor authentication (2FA)")).to_have_count(0)
        expect(page.get_by_role("heading", name="Passkey")).to_have_count(0)
        expect(page.get_by_role("alert")).to_have_count(0)
        screenshot(page, "personal-without-2fa-and-passkeys")
        assert not errors.seen, "\n".join(errors.seen)
    finally:
        ctx.close()
