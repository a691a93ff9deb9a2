"""Signing in on a new gateway: the setup wizard makes root; a user with 2FA passes the
code step; a user registers a passkey (Chromium's virtual authenticator) and logs in with
it. The gateway is served as ``localhost``: WebAuthn takes no IP address as its site."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from faregate.testing.harness import GatewayProcess
from faregate_web.testing import PageErrors, screenshot

ROOT = "wizard-root-password"
PASSWORD = "sign-in-password-1"


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway nobody has set up yet; its address."""
    proc = GatewayProcess(str(tmp_path_factory.mktemp("fresh") / "data"))
    proc.start()
    yield proc.base_url.replace("127.0.0.1", "localhost")
    proc.stop()


@pytest.fixture
def visit(browser: Browser, fresh: str) -> Iterator[Page]:
    ctx = browser.new_context(base_url=fresh, locale="en-US")
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    errors = PageErrors(page)
    yield page
    ctx.close()
    assert not errors.seen, "\n".join(errors.seen)


def _client(base: str, username: str, password: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=30)
    user = client.post("/api/user/login", json={"username": username, "password": password}).json()["data"]
    client.headers["New-Api-User"] = str(user["id"])
    return client


def _ok(client: httpx.Client, method: str, path: str, **kwargs: Any) -> Any:
    body = client.request(method, path, **kwargs).json()
    assert body["success"], body
    return body.get("data")


def _log_in(page: Page, username: str, password: str) -> None:
    page.goto("/login")
    page.get_by_label("Username or email").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in", exact=True).click()


def test_1_the_setup_wizard_makes_root(fresh: str, visit: Page) -> None:
    page = visit
    page.goto("/")
    page.wait_for_url("**/setup")
    page.get_by_label("Root username").fill("root")
    page.get_by_label("Password", exact=True).fill(ROOT)
    page.get_by_label("Repeat the password").fill(ROOT)
    screenshot(page, "setup")
    page.get_by_role("button", name="Create the root account").click()
    page.wait_for_url("**/login")
    _log_in(page, "root", ROOT)
    page.wait_for_url("**/console")
    expect(page.get_by_role("navigation", name="Console")).to_contain_text("System settings")
    assert httpx.get(fresh + "/api/status").json()["data"]["setup"] is True


def test_2_a_user_with_two_factors_passes_the_code_step(fresh: str, visit: Page) -> None:
    assert httpx.post(fresh + "/api/user/register", json={"username": "tina", "password": PASSWORD}).json()["success"]
    import pyotp

    tina = _client(fresh, "tina", PASSWORD)
    setup = _ok(tina, "POST", "/api/user/2fa/setup")
    _ok(tina, "POST", "/api/user/2fa/enable", json={"code": pyotp.TOTP(setup["secret"]).now()})
    tina.close()
    page = visit
    _log_in(page, "tina", PASSWORD)
    code = page.get_by_label("Two-factor code")
    expect(code).to_be_visible()
    code.fill("000000")
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("alert")).to_contain_text("wrong")
    code.fill(setup["backup_codes"][0])  # the app's current code was spent enabling 2FA
    page.get_by_role("button", name="Verify").click()
    page.wait_for_url("**/console")


def test_3_a_passkey_registered_in_the_console_signs_in(fresh: str, visit: Page) -> None:
    root = _client(fresh, "root", ROOT)
    _ok(root, "PUT", "/api/option/", json={"key": "passkey.enabled", "value": "true"})
    _ok(root, "PUT", "/api/option/", json={"key": "passkey.origins", "value": fresh})
    root.close()
    assert httpx.post(fresh + "/api/user/register", json={"username": "pat", "password": PASSWORD}).json()["success"]
    page = visit
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": True, "automaticPresenceSimulation": True}})
    _log_in(page, "pat", PASSWORD)
    page.wait_for_url("**/console")
    page.goto("/console/personal")
    page.get_by_role("button", name="Register a passkey").click()
    confirm = page.get_by_role("dialog", name="Confirm it is you")
    confirm.get_by_label("Password").fill(PASSWORD)
    confirm.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("A passkey is registered")).to_be_visible()
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/login")
    page.get_by_role("button", name="Log in with a passkey").click()
    page.wait_for_url("**/console")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()

