"""The console on a phone, from the keyboard alone, and in the dark."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from faregate_web.testing import MAIN_PAGES, ROOT_PASSWORD, Web, log_in, screenshot


def _no_sideways_scroll(page: Page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_a_phone_gets_a_menu_and_no_sideways_scrolling(web: Web, phone_page: Page) -> None:
    web.add_channel()  # rows in the tables the loop below opens
    page = phone_page
    log_in(page, "root", ROOT_PASSWORD)
    page.goto("/console/token")
    nav = page.get_by_role("navigation", name="Console")
    expect(nav).to_be_hidden()
    menu = page.get_by_role("button", name="Menu")
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(nav).to_be_visible()
    nav.get_by_role("link", name="Playground").click()
    page.wait_for_url("**/console/playground")
    expect(nav).to_be_hidden()
    _no_sideways_scroll(page)
    screenshot(page, "phone-playground")
    # every main page fits the phone's width (tables scroll in their own region)
    wide = {}
    for path in MAIN_PAGES:
        page.goto(path)
        expect(page.locator("main h1")).to_be_visible()
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > page.evaluate("window.innerWidth") + 1:
            wide[path] = width
    assert not wide, f"wider than the phone (390 px): {wide}"


def test_log_in_and_move_around_with_the_keyboard_only(web: Web, page: Page) -> None:
    page.goto("/login")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.get_by_label("Username or email").focus()
    page.keyboard.type("root")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Password")).to_be_focused()
    page.keyboard.type(ROOT_PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_url("**/console")
    # a dialog: opened from the keyboard, focus inside, Escape closes it
    page.goto("/console/token")
    new_key = page.get_by_role("button", name="New key")
    new_key.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_dark_mode_follows_the_system_and_the_header_choice(web: Web, browser: Browser) -> None:
    ctx = browser.new_context(base_url=web.base_url, color_scheme="dark")
    try:
        page = ctx.new_page()
        page.goto("/login")
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
        background = "getComputedStyle(document.body).backgroundColor"
        assert page.evaluate(background) == "rgb(18, 19, 24)"  # the system's dark
        page.get_by_label("Theme").select_option("light")
        assert page.evaluate(background) == "rgb(247, 247, 249)"
        page.reload()  # the choice is kept
        expect(page.get_by_label("Theme")).to_have_value("light")
        assert page.evaluate(background) == "rgb(247, 247, 249)"
        page.get_by_label("Theme").select_option("dark")
        screenshot(page, "login-dark")
    finally:
        ctx.close()
