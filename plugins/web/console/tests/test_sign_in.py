"""Signing in on a new gateway: the setup wizard makes root; a user with 2FA passes the
code step; a user registers a passkey (Chromium's virtual authenticator) and logs in with
it; a user who forgot the password asks for the reset link, which arrives by email (the
email plugin's local SMTP server) and, opened, shows a new password that logs in. The
gateway is served as ``localhost``: WebAuthn takes no IP address as its site."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from faregate.testing.harness import GatewayProcess
from faregate_auth_email.testing import LocalSMTP
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
    page.wait_for_load_state("networkidle")  # the page's reads answered: a logout ends their session
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/login")
    page.get_by_role("button", name="Log in with a passkey").click()
    page.wait_for_url("**/console")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()



@pytest.fixture
def smtp() -> Iterator[LocalSMTP]:
    server = LocalSMTP()
    server.start()
    yield server
    server.stop()


def test_4_a_forgotten_password_is_reset_by_email(fresh: str, visit: Page, smtp: LocalSMTP) -> None:
    root = _client(fresh, "root", ROOT)
    for key, value in (("SMTPServer", "127.0.0.1"), ("SMTPPort", str(smtp.port)), ("SMTPFrom", "gate@example.com"),
                       ("ServerAddress", fresh)):
        _ok(root, "PUT", "/api/option/", json={"key": key, "value": value})
    assert httpx.post(fresh + "/api/user/register", json={"username": "rita", "password": PASSWORD}).json()["success"]
    [rita] = _ok(root, "GET", "/api/user/search", params={"keyword": "rita"})["items"]
    _ok(root, "PUT", "/api/user/", json={"id": rita["id"], "email": "rita@example.com"})
    root.close()

    page = visit
    page.goto("/login")
    page.get_by_role("link", name="Forgot your password?").click()
    page.wait_for_url("**/reset")
    page.get_by_label("Email").fill("rita@example.com")
    page.get_by_role("button", name="Send the reset link").click()
    expect(page.get_by_role("status").filter(has_text="a reset link is on its way")).to_be_visible()
    screenshot(page, "reset-ask")

    deadline = time.monotonic() + 10
    while not [m for m in smtp.messages if "rita@example.com" in str(m["To"])]:
        assert time.monotonic() < deadline, "no reset mail arrived"
        time.sleep(0.05)
    found = re.search(r'href="([^"]+)"', LocalSMTP.html(smtp.messages[-1]))
    assert found is not None
    link = html.unescape(found[1])
    assert link.startswith(fresh + "/user/reset?email=")  # new-api's reset link
    page.goto(link)
    expect(page.get_by_role("heading", name="Reset the password")).to_be_visible()
    expect(page.get_by_text("Reset the password of rita@example.com?")).to_be_visible()
    page.get_by_role("button", name="Reset the password").click()
    shown = page.get_by_test_id("new-password")
    expect(shown).not_to_be_empty()
    new_password = shown.inner_text().strip()
    screenshot(page, "reset-done")
    # the old password is gone; the new one logs in
    old = httpx.post(fresh + "/api/user/login", json={"username": "rita", "password": PASSWORD}).json()
    assert old["success"] is False
    _log_in(page, "rita", new_password)
    page.wait_for_url("**/console")
