"""Every page the console's router draws opens as root, in English and in Chinese, with
its heading (in Chinese: the heading and the page's text in Chinese, the header's landmarks
named in Chinese) and without a console error (the page fixture fails on any); a screenshot
of each is kept, checked to be a PNG."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Page, expect

from faregate_web.testing import MAIN_PAGES, ROOT_PASSWORD, Web, is_png, screenshot

HAN = re.compile(r"[\u4e00-\u9fff]")


def _visit_all(page: Page, suffix: str, chinese: bool = False) -> None:
    shots = []
    for path in MAIN_PAGES:
        page.goto(path)
        heading = page.locator("main h1")
        expect(heading).to_be_visible()
        expect(heading).not_to_have_text("404")
        page.wait_for_load_state("networkidle")
        if chinese:
            title = heading.inner_text()
            # the home page's heading is the site's name (Faregate): its text says the rest
            assert HAN.search(title) or (path == "/" and title == "Faregate"), f"{path}: heading {title!r}"
            assert len(HAN.findall(page.locator("main").inner_text())) >= 4, f"{path}: no Chinese text"
        name = path.strip("/").replace("/", "-") or "home"
        shots.append(screenshot(page, f"all-{name}{suffix}"))
    assert all(p.stat().st_size > 0 and is_png(p) for p in shots), shots


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
    expect(page.get_by_role("navigation", name="站点导航")).to_contain_text("模型价格")
    _visit_all(page, "-zh", chinese=True)
