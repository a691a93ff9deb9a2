"""A key's rate limits in the console, in Chromium (issue 29 item 2): ``rpm_limit``,
``tpm_limit`` and ``max_parallel_requests`` set in the key form, listed, edited and cleared; a
value out of the API's bounds is refused on its field by the form (nothing sent) and, past the
form, by the server (its 400 shown on the field), nothing stored either way; a key made in the
console with a limit of 2 requests a minute gets 200, 200, 429 from the relay. Root edits the
groups' defaults (``KeyRateLimitGroup``) beside new-api's model request rate limit in the
system settings, checked as the other JSON options are."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, Route, expect

from faregate_web.testing import MODEL, ROOT_PASSWORD, PageErrors, Web, log_in, register_user, screenshot

PASSWORD = "limits-password-1"
OUT_OF_RANGE = "A whole number from 0 to 2,147,483,647, or empty."
REFUSED = "console error: Failed to load resource: the server responded with a status of 400"


@pytest.fixture
def tolerant_page(browser: Browser, web: Web) -> Iterator[Page]:
    """A fresh English page, except that the browser's note of a refusal the test provokes (an
    HTTP 400 answer to the key or option API, shown on the page) is expected, not an error."""
    ctx = browser.new_context(base_url=web.base_url, locale="en-US", viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    errors = PageErrors(page)
    yield page
    ctx.close()
    unexpected = [
        e for e in errors.seen if not (e.startswith(REFUSED) and e.endswith(("/api/token/)", "/api/option/)")))
    ]
    assert not unexpected, "\n".join(unexpected)


def _stored(page: Page, name: str) -> list[dict[str, Any]]:
    """The signed-in user's keys called ``name``, as the key API answers them."""
    uid = page.evaluate("localStorage.getItem('uid')")
    got = page.request.get(f"/api/token/search?keyword={name}", headers={"New-Api-User": uid}).json()
    return [row for row in got["data"]["items"] if row["name"] == name]


def _limits(row: dict[str, Any]) -> tuple[int, int, int]:
    return row["rpm_limit"], row["tpm_limit"], row["max_parallel_requests"]


def _fill_limits(form: Locator, rpm: str, tpm: str, parallel: str) -> None:
    form.get_by_label("Requests per minute").fill(rpm)
    form.get_by_label("Tokens per minute").fill(tpm)
    form.get_by_label("Parallel requests").fill(parallel)


def _new_key(page: Page, name: str, rpm: str = "", tpm: str = "", parallel: str = "") -> str:
    """A key made through the form (its limits typed in): the key, shown once."""
    page.get_by_role("button", name="New key").click()
    form = page.get_by_role("dialog", name="New key")
    form.get_by_label("Name", exact=True).fill(name)
    _fill_limits(form, rpm, tpm, parallel)
    form.get_by_role("button", name="Save").click()
    shown = page.get_by_test_id("new-key")
    expect(shown).to_contain_text("sk-")
    key = shown.inner_text().strip()
    created = page.get_by_role("dialog", name="Your new key")
    created.get_by_role("button", name="Close").click()
    expect(created).to_be_hidden()
    return key


def test_a_key_s_rate_limits_are_set_edited_and_cleared_in_the_form(web: Web, tolerant_page: Page) -> None:
    page = tolerant_page
    register_user(web, "erin", PASSWORD)
    log_in(page, "erin", PASSWORD)
    page.goto("/console/token")

    # out of bounds on a new key: the field says so, the dialog stays, nothing is sent
    page.get_by_role("button", name="New key").click()
    form = page.get_by_role("dialog", name="New key")
    form.get_by_label("Name", exact=True).fill("refused")
    _fill_limits(form, "-1", "1.5", "2147483648")
    form.get_by_role("button", name="Save").click()
    for label in ("Requests per minute", "Tokens per minute", "Parallel requests"):
        field = form.get_by_label(label)
        expect(field).to_have_attribute("aria-invalid", "true")
        expect(field).to_have_accessible_description(OUT_OF_RANGE)
    screenshot(page, "key-limits-refused")
    form.get_by_label("Requests per minute").fill("7")  # typing clears that field's complaint only
    expect(form.get_by_label("Requests per minute")).not_to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("Tokens per minute")).to_have_attribute("aria-invalid", "true")
    form.get_by_role("button", name="Close").click()
    assert _stored(page, "refused") == []

    # set on a new key, stored, listed, and there after a reload
    _new_key(page, "limited", rpm="60", tpm="90000", parallel="4")
    [row] = _stored(page, "limited")
    assert _limits(row) == (60, 90_000, 4)
    page.reload()
    line = page.get_by_role("row").filter(has_text="limited")
    expect(line).to_contain_text("60/min · 90,000 tokens/min · 4 at once")
    screenshot(page, "key-limits")

    # back into the form as saved; one changed, one cleared (empty: none of its own)
    line.get_by_role("button", name="Edit").click()
    form = page.get_by_role("dialog", name="Edit key")
    expect(form.get_by_label("Requests per minute")).to_have_value("60")
    expect(form.get_by_label("Tokens per minute")).to_have_value("90000")
    expect(form.get_by_label("Parallel requests")).to_have_value("4")
    form.get_by_label("Requests per minute").fill("30")
    form.get_by_label("Tokens per minute").fill("")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    [row] = _stored(page, "limited")
    assert _limits(row) == (30, 0, 4)
    expect(line).to_contain_text("30/min · 4 at once")

    # a bad value while editing: refused on its field, the stored limits unchanged
    line.get_by_role("button", name="Edit").click()
    form = page.get_by_role("dialog", name="Edit key")
    expect(form.get_by_label("Tokens per minute")).to_have_value("")
    form.get_by_label("Parallel requests").fill("lots")
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_label("Parallel requests")).to_have_accessible_description(OUT_OF_RANGE)
    assert _limits(_stored(page, "limited")[0]) == (30, 0, 4)

    # past the form's check (the request rewritten on its way): the server's 400 names the field
    def too_many(route: Route) -> None:
        body = json.loads(route.request.post_data or "{}")
        route.continue_(post_data=json.dumps({**body, "max_parallel_requests": 2**31}))

    form.get_by_label("Parallel requests").fill("5")
    page.route("**/api/token/", too_many)
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_label("Parallel requests")).to_have_accessible_description(
        "max_parallel_requests: Input should be less than or equal to 2147483647"
    )
    page.unroute("**/api/token/", too_many)
    assert _limits(_stored(page, "limited")[0]) == (30, 0, 4)

    # all cleared
    form.get_by_label("Requests per minute").fill("")
    form.get_by_label("Parallel requests").fill("")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    assert _limits(_stored(page, "limited")[0]) == (0, 0, 0)
    expect(line).to_contain_text("None")


def test_a_key_limited_in_the_console_gets_429_from_the_relay(web: Web, page: Page) -> None:
    web.add_channel()
    web.ok("PUT", "/api/option/", json={"key": "QuotaForNewUser", "value": "1000000"})
    register_user(web, "frank", PASSWORD)
    log_in(page, "frank", PASSWORD)
    page.goto("/console/token")
    key = _new_key(page, "two-a-minute", rpm="2")
    with httpx.Client(base_url=web.base_url, timeout=30) as http:
        answers = [
            http.post(
                "/v1/chat/completions",
                headers={"Authorization": f"Bearer {key}"},
                json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
            )
            for _ in range(3)
        ]
    assert [a.status_code for a in answers] == [200, 200, 429], answers[-1].text
    assert answers[2].headers["x-ratelimit-limit-requests"] == "2"


def test_groups_key_limits_are_edited_beside_the_model_request_rate_limit(web: Web, tolerant_page: Page) -> None:
    page = tolerant_page
    log_in(page, "root", ROOT_PASSWORD)
    page.get_by_role("link", name="System settings").click()
    section = page.locator("details.settings-section").filter(has=page.get_by_role("heading", name="Rate limits"))
    section.locator("summary").click()
    for key in ("ModelRequestRateLimitEnabled", "ModelRequestRateLimitGroup", "KeyRateLimitGroup"):
        expect(section.locator(f"form[data-key='{key}']")).to_be_visible()

    area = section.get_by_role("textbox", name="KeyRateLimitGroup", exact=True)
    outcome = section.locator("form[data-key='KeyRateLimitGroup'] [role=alert]")
    save = section.get_by_role("button", name="Save KeyRateLimitGroup")
    area.fill('{"vip": {"rpm_limit": 5}')  # not JSON: refused before it is sent
    save.click()
    expect(outcome).to_contain_text("not valid JSON")
    area.fill('{"vip": {"rpm_limit": -1}}')  # JSON, out of bounds: the server's refusal
    save.click()
    expect(outcome).to_contain_text("group vip: rpm_limit must be a whole number from 0 to 2147483647")
    area.fill('{"vip": {"rpm": 5}}')
    save.click()
    expect(outcome).to_contain_text("group vip: unknown field rpm")
    assert {o["key"]: o["value"] for o in web.ok("GET", "/api/option/")}["KeyRateLimitGroup"] == "{}"

    area.fill('{"vip": {"rpm_limit": 600, "max_parallel_requests": 10}}')
    save.click()
    expect(section.locator("form[data-key='KeyRateLimitGroup']")).to_contain_text("Saved")
    screenshot(page, "settings-rate-limits")
    page.reload()
    page.get_by_label("Filter settings").fill("KeyRateLimitGroup")
    expect(page.get_by_role("textbox", name="KeyRateLimitGroup", exact=True)).to_have_value(
        '{"vip": {"rpm_limit": 600, "max_parallel_requests": 10}}'
    )
    stored = {o["key"]: o["value"] for o in web.ok("GET", "/api/option/")}["KeyRateLimitGroup"]
    assert json.loads(stored) == {"vip": {"rpm_limit": 600, "max_parallel_requests": 10}}
    web.ok("PUT", "/api/option/", json={"key": "KeyRateLimitGroup", "value": "{}"})
