"""Every page the console's router draws opens as root, in English and in Chinese, with
its heading and without a console error (the page fixture fails on any); a screenshot of
each is kept."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from faregate_web.testing import ROOT_PASSWORD, Web, screenshot

PAGES = ["/", "/about", "/pricing", "/console", "/console/playground", "/console/token", "/console/log",
         "/console/topup", "/console/personal", "/console/channel", "/console/user", "/console/redemption",
         "/console/models", "/console/setting"]


def _visit_all(page: Page, suffix: str) -> None:
    for path in PAGES:
        page.goto(path)
        heading = page.locator("main h1")
        expect(heading).to_be_visible()
        expect(heading).not_to_have_text("404")
        page.wait_for_load_state("networkidle")
        name = path.strip("/").replace("/", "-") or "home"
        screenshot(page, f"all-{name}{suffix}")


def test_every_page_opens_in_english(web: Web, admin_page: Page) -> None:
    web.add_channel()
    _visit_all(admin_page, "")


@pytest.fixture
def chinese_page(browser: Browser, web: Web):  # type: ignore[no-untyped-def]
    from faregate_web.testing import PageErrors

    ctx = browser.new_context(base_url=web.base_url, locale="zh-CN", viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    errors = PageErrors(page)
    yield page
    ctx.close()
    assert not errors.seen, "\n".join(errors.seen)


def test_every_page_opens_in_chinese(web: Web, chinese_page: Page) -> None:
    page = chinese_page
    page.goto("/login")
    page.get_by_label("用户名或邮箱").fill("root")
    page.get_by_label("密码").fill(ROOT_PASSWORD)
    page.get_by_role("button", name="登录", exact=True).click()
    page.wait_for_url("**/console")
    expect(page.get_by_role("navigation", name="控制台")).to_contain_text("令牌管理")
    _visit_all(page, "-zh")
