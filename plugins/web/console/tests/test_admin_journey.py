"""An operator's first hour, end to end in Chromium: add a channel through the form, test
it, send a chat through the playground, find the request in the logs, and see its usage on
the dashboard's chart; every page visited raises no console error."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from faregate_web.testing import MODEL, Web, screenshot


def test_add_a_channel_test_it_chat_and_see_the_usage(admin_page: Page, web: Web) -> None:
    page = admin_page
    page.get_by_role("link", name="Channels").click()
    page.get_by_role("button", name="Add channel").click()
    form = page.get_by_role("dialog", name="Add a channel")
    form.get_by_label(re.compile(r"^Type")).select_option("1")
    form.get_by_label(re.compile(r"^Name")).fill("first-line")
    form.get_by_label(re.compile(r"^Key\b")).fill("sk-upstream")
    form.get_by_label(re.compile(r"^Base URL")).fill(web.upstream.base_url)
    form.get_by_label(re.compile(r"^Models")).fill(MODEL)
    form.get_by_role("button", name="Create").click()
    row = page.get_by_role("row").filter(has_text="first-line")
    row.get_by_role("button", name="Test first-line").click()
    probe = page.get_by_role("dialog", name="Test first-line")
    probe.get_by_role("button", name="Run the test").click()
    expect(probe.get_by_text(re.compile(r"The test succeeded in [\d.]+ s"))).to_be_visible(timeout=20_000)
    probe.get_by_role("button", name="Close").click()

    page.get_by_role("link", name="Playground").click()
    expect(page.get_by_label("Model")).to_have_value(MODEL)
    page.get_by_label("Message").fill("hello from the console")
    page.get_by_role("button", name="Send").click()
    reply = page.locator("article.message.assistant").last
    expect(reply).to_have_attribute("aria-busy", "false")
    expect(reply).to_contain_text("hello from the console")

    page.get_by_role("link", name="Logs").click()
    expect(page.get_by_role("heading", name="Usage logs")).to_be_visible()
    listed = page.locator(".table-wrap").get_by_role("row").filter(has_text="playground-default")
    expect(listed).to_have_count(1, timeout=10_000)
    expect(listed).to_contain_text(MODEL)
    screenshot(page, "logs-after-chat")

    page.get_by_role("link", name="Dashboard").click()
    chart = page.locator("figure#chart-models")
    expect(chart.locator("canvas")).to_have_count(1)
    expect(chart).to_contain_text(MODEL)
    expect(page.locator("figure#chart-keys")).to_contain_text("playground-default")
    screenshot(page, "dashboard-after-chat")
