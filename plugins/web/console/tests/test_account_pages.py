"""The account pages in Chromium: the wallet (a redemption code raises the balance), the
personal settings (display name, an access token shown once that works) and, as root, the
system settings generated from the option registry (a bounded integer refused by the server
out of range, saved within it, still there after a reload)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pyotp
import pytest
from playwright.sync_api import Browser, Page, expect

from faregate_web.testing import ROOT_PASSWORD, PageErrors, Web, log_in, register_user, screenshot

PASSWORD = "account-password-1"


def test_the_wallet_redeems_a_code(web: Web, page: Page) -> None:
    register_user(web, "walletuser", PASSWORD)
    (code,) = web.ok("POST", "/api/redemption/", json={"name": "gift", "count": 1, "quota": 1_000_000})
    log_in(page, "walletuser", PASSWORD)
    page.get_by_role("link", name="Wallet").click()
    balance = page.get_by_test_id("balance")
    expect(balance).to_have_text("$0.00")
    expect(page.get_by_label("Your invitation link")).to_have_value(re.compile(r"/register\?aff=\w{4}$"))
    page.get_by_label("Redemption code").fill(code)
    page.get_by_role("button", name="Redeem").click()
    expect(balance).to_have_text("$2.00")  # 1,000,000 quota at 500,000 a dollar
    expect(page.get_by_role("status").filter(has_text="Redeemed")).to_be_visible()
    # the same code again: the server's refusal, the balance unchanged
    page.get_by_label("Redemption code").fill(code)
    page.get_by_role("button", name="Redeem").click()
    expect(page.get_by_role("alert")).to_contain_text("has been used")
    expect(balance).to_have_text("$2.00")

    # online top-up once Epay is set up: a preset with its discount, the price, then off to the gateway
    for key, value in (("PayAddress", "https://pay.example.com"), ("EpayId", "1001"), ("EpayKey", "merchant-key"),
                       ("ServerAddress", "http://127.0.0.1:1"), ("payment_setting.amount_discount", '{"100": 0.95}')):
        web.ok("PUT", "/api/option/", json={"key": key, "value": value})
    page.reload()
    page.get_by_role("button", name="100 5% off").click()
    screenshot(page, "wallet")
    page.get_by_role("button", name="Pay with 支付宝").click()
    expect(page.get_by_test_id("price")).to_have_text("693.50 CNY")  # 100 units at 7.3 CNY, 5% off
    page.route("https://pay.example.com/**", lambda route: route.fulfill(status=200, body="paying"))
    page.get_by_role("button", name="Pay now").click()
    page.wait_for_url("https://pay.example.com/submit.php?**")
    assert "money=693.50" in page.url and "sign=" in page.url and "type=alipay" in page.url


def test_personal_settings_change_the_name_and_make_an_access_token(web: Web, page: Page) -> None:
    register_user(web, "personaluser", PASSWORD)
    log_in(page, "personaluser", PASSWORD)
    page.get_by_role("link", name="Personal settings").click()
    expect(page.get_by_role("heading", name="Two-factor authentication (2FA)")).to_be_visible()  # the totp plugin
    page.get_by_role("textbox", name="Display name").fill("Pat Person")
    page.get_by_role("button", name="Save").first.click()
    expect(page.get_by_test_id("display-name")).to_have_text("Pat Person")

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Generate an access token").click()
    shown = page.get_by_test_id("access-token")
    expect(shown).not_to_be_empty()
    token = shown.inner_text().strip()
    screenshot(page, "personal")
    me = httpx.get(web.base_url + "/api/user/self", headers={"Authorization": token, "New-Api-User": str(
        page.evaluate("localStorage.getItem('uid')"))}).json()
    assert me["success"] and me["data"]["display_name"] == "Pat Person", me

    # 2FA: the secret and the otpauth link shown as text, enabled with a code from it
    page.get_by_role("button", name="Set up 2FA").click()
    secret = page.get_by_test_id("totp-secret").inner_text().strip()
    expect(page.get_by_role("link", name=re.compile(r"^otpauth:..totp."))).to_be_visible()
    page.get_by_label("6-digit code").fill(pyotp.TOTP(secret).now())
    page.get_by_role("button", name="Enable 2FA").click()
    expect(page.get_by_role("heading", name="Two-factor authentication (2FA) On")).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Backup codes left: [1-9]"))).to_be_visible()


@pytest.fixture
def root_page(browser: Browser, web: Web) -> Iterator[Page]:
    """``admin_page``, except that the browser's note of the one refusal the test provokes (an
    HTTP 400 answer to ``PUT /api/option/``, shown on the page) is expected, not an error."""
    ctx = browser.new_context(base_url=web.base_url, locale="en-US", viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    errors = PageErrors(page)
    log_in(page, "root", ROOT_PASSWORD)
    yield page
    ctx.close()
    refusal = "console error: Failed to load resource: the server responded with a status of 400"
    expected = [e for e in errors.seen if e.startswith(refusal) and e.endswith("/api/option/)")]
    assert len(expected) == 1 and len(errors.seen) == 1, "\n".join(errors.seen)


def test_system_settings_are_typed_forms_checked_by_the_server(web: Web, root_page: Page) -> None:
    page = root_page
    page.get_by_role("link", name="System settings").click()
    expect(page.get_by_role("heading", name="General and display")).to_be_visible()
    # the kinds: a checkbox, a select of the choices, a JSON text area
    expect(page.get_by_role("checkbox", name="DisplayInCurrencyEnabled")).to_be_checked()
    expect(page.get_by_role("combobox", name="general_setting.quota_display_type")).to_have_value("USD")
    screenshot(page, "settings")

    page.get_by_label("Filter settings").fill("RetryTimes")
    retries = page.get_by_role("spinbutton", name="RetryTimes", exact=True)
    expect(retries).to_have_attribute("max", "10")
    retries.fill("11")
    page.get_by_role("button", name="Save RetryTimes").click()
    expect(page.locator("form[data-key='RetryTimes'] [role=alert]")).to_contain_text(
        "RetryTimes: expected a whole number from 0 to 10")
    retries.fill("3")
    page.get_by_role("button", name="Save RetryTimes").click()
    expect(page.locator("form[data-key='RetryTimes']")).to_contain_text("Saved")

    # JSON is checked before it is sent
    page.get_by_label("Filter settings").fill("GroupRatio")
    area = page.get_by_role("textbox", name="GroupRatio", exact=True)
    area.fill('{"default": 1,')
    page.get_by_role("button", name="Save GroupRatio", exact=True).click()
    expect(page.locator("form[data-key='GroupRatio'] [role=alert]")).to_contain_text("not valid JSON")

    page.reload()
    page.get_by_label("Filter settings").fill("RetryTimes")
    expect(page.get_by_role("spinbutton", name="RetryTimes", exact=True)).to_have_value("3")
    assert {o["key"]: o["value"] for o in web.ok("GET", "/api/option/")}["RetryTimes"] == "3"
    web.ok("PUT", "/api/option/", json={"key": "RetryTimes", "value": "0"})
