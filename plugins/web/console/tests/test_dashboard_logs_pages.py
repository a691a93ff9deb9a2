"""The dashboard (/console) and the usage logs (/console/log), after a few requests relayed
with a real API key: the logs list them, a model filter narrows them, a row's details open,
the export downloads the filtered rows and counts them as they arrive; the dashboard's cards and its charts by model and
by key are drawn (and follow the window down to a phone's width)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Page, expect

from faregate_web.testing import MODEL, Web, log_in, register_user, screenshot

OTHER_MODEL = "gpt-4o"
KEY_NAME = "dash-key"


@pytest.fixture(scope="module")
def relayed(web: Web) -> Iterator[None]:
    """Three chat requests through a key of root's: two to MODEL, one to OTHER_MODEL."""
    web.add_channel(models=f"{MODEL},{OTHER_MODEL}")
    token = web.ok("POST", "/api/token/", json={"name": KEY_NAME, "unlimited_quota": True})
    key = web.ok("POST", f"/api/token/{token['id']}/key")["key"]
    with httpx.Client(base_url=web.base_url, timeout=30, headers={"Authorization": f"Bearer sk-{key}"}) as client:
        for model in (MODEL, MODEL, OTHER_MODEL):
            resp = client.post("/v1/chat/completions",
                               json={"model": model, "messages": [{"role": "user", "content": "hello"}]})
            assert resp.status_code == 200, resp.text
    deadline = time.monotonic() + 15
    while web.ok("GET", "/api/log/", params={"type": 2, "token_name": KEY_NAME})["total"] < 3:
        assert time.monotonic() < deadline, "the relayed requests were not logged"
        time.sleep(0.2)
    yield


def test_logs_are_listed_filtered_detailed_and_exported(admin_page: Page, relayed: None) -> None:
    page = admin_page
    page.goto("/console/log")
    expect(page.get_by_role("heading", name="Usage logs")).to_be_visible()
    rows = page.locator("tr.log-row")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text=MODEL)).to_have_count(2)
    expect(page.locator(".stat-bar")).to_contain_text("RPM")

    page.get_by_label("Model", exact=True).fill(OTHER_MODEL)
    page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(OTHER_MODEL)
    expect(rows.first).to_contain_text(KEY_NAME)

    toggle = rows.first.get_by_role("button", name="Details of log")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    detail = page.locator("tr.log-detail")
    expect(detail).to_be_visible()
    expect(detail.locator("pre.log-other")).to_be_visible()  # the JSON as text, indented
    screenshot(page, "logs")

    with page.expect_download() as info:
        page.get_by_role("button", name="Export").click()
    download = info.value
    assert download.suggested_filename.endswith(".csv")
    lines = open(download.path(), encoding="utf-8").read().strip().splitlines()
    assert lines[0].startswith("id,created_at,type") and len(lines) == 2 and OTHER_MODEL in lines[1]
    status = page.locator(".export-status")
    expect(status).to_contain_text("Exported logs-")
    expect(status).to_contain_text(re.compile(r"Rows: 1, [\d.]+ K?B received"))

    # the progress follows the stream: the export held after its first row shows that row
    page.get_by_role("button", name="Reset").click()
    expect(rows).to_have_count(3)
    page.evaluate("""() => {
        const real = window.fetch
        let release
        window.releaseExport = () => release()
        const held = new Promise(resolve => { release = resolve })
        window.fetch = async (url, init) => {
            const res = await real(url, init)
            if (!String(url).includes('/export')) return res
            const text = await res.text()
            const cut = text.indexOf('\\n') + 1
            const bytes = new TextEncoder()
            const body = new ReadableStream({ async start (out) {
                out.enqueue(bytes.encode(text.slice(0, cut)))
                await held
                out.enqueue(bytes.encode(text.slice(cut)))
                out.close()
            } })
            return new Response(body, { status: res.status, headers: res.headers })
        }
    }""")
    page.get_by_label("Export format").select_option("jsonl")
    with page.expect_download() as info:
        page.get_by_role("button", name="Export").click()
        expect(status).to_have_attribute("aria-busy", "true")
        expect(status).to_contain_text(re.compile(r"Exporting the matching logs… Rows: 1, [\d.]+ K?B received"))
        page.evaluate("window.releaseExport()")
        expect(status).to_contain_text(re.compile(r"Exported logs-\d+\.jsonl\. Rows: 3, [\d.]+ K?B received"))
    assert info.value.suggested_filename.endswith(".jsonl")
    assert len(open(info.value.path(), encoding="utf-8").read().splitlines()) == 3


def test_dashboard_cards_and_charts_by_model_and_key(admin_page: Page, relayed: None) -> None:
    page = admin_page
    page.goto("/console")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    for label in ("Balance", "Used quota", "Requests", "RPM (last minute)", "TPM (last minute)"):
        expect(page.locator(".card", has_text=label)).to_be_visible()
    by_model = page.locator("figure#chart-models")
    by_key = page.locator("figure#chart-keys")
    expect(by_model.locator("figcaption")).to_contain_text("by model")
    expect(by_model.locator("canvas")).to_have_count(1)
    names = by_model.locator(".table-wrap tbody td:first-child")  # the biggest spender first
    expect(names).to_have_count(2)
    assert sorted(names.all_text_contents()) == sorted([MODEL, OTHER_MODEL])
    expect(by_model.locator(".u-legend")).to_contain_text(MODEL)  # a series of the drawn chart
    expect(by_key.locator("canvas")).to_have_count(1)
    expect(by_key.locator(".table-wrap tbody tr", has_text=KEY_NAME)).to_contain_text("3")  # its three requests
    expect(page.locator(".api-base code")).to_have_text(page.evaluate("location.origin"))

    page.get_by_label("Show").select_option("count")
    expect(by_model.locator("figcaption")).to_contain_text("Requests by model")
    page.get_by_label("Whose usage").select_option("site")
    expect(page.get_by_role("region", name="Top users in range")).to_contain_text("root")
    expect(by_model.locator("canvas")).to_have_count(1)
    screenshot(page, "dashboard")

    page.get_by_label("Theme").select_option("dark")
    expect(by_model.locator("canvas")).to_have_count(1)  # redrawn in the dark theme's colours
    page.set_viewport_size({"width": 390, "height": 844})
    canvas = by_model.locator("canvas")
    deadline = time.monotonic() + 5  # (wait_for_function would eval a string: the page's policy refuses eval)
    while (canvas.bounding_box() or {"width": 0})["width"] > 390:
        assert time.monotonic() < deadline, "the chart did not follow the window"
        page.wait_for_timeout(100)
    assert page.evaluate("document.documentElement.scrollWidth") <= 400  # nothing wider than the phone
    screenshot(page, "dashboard-phone-dark")


def test_a_user_sees_only_their_own_usage(page: Page, web: Web, relayed: None) -> None:
    register_user(web, "dash-user", "user-password-1")
    log_in(page, "dash-user", "user-password-1")
    expect(page.locator("figure#chart-models")).to_contain_text("No usage in this range.")
    expect(page.get_by_label("Whose usage")).to_have_count(0)
    page.get_by_role("link", name="Logs").click()
    expect(page.get_by_role("heading", name="Usage logs")).to_be_visible()
    expect(page.get_by_text("Nothing here yet.")).to_be_visible()  # root's requests are not theirs
    expect(page.get_by_label("Username", exact=True)).to_have_count(0)
    expect(page.locator(".stat-bar")).to_contain_text("Quota spent$0.00")
