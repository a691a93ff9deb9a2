"""The admin pages and the public price list: users (create, edit the quota, disable, a
refused 2FA reset shows the server's message), redemption codes (a batch of three shown,
copied and saved once, then listed), models (a vendor, metadata for a model a channel
serves, the upstream sync from a local catalogue) and /pricing signed out."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Page, expect

from faregate_web.testing import MODEL, Web, screenshot


@pytest.fixture(scope="module")
def channel(web: Web) -> int:
    return web.add_channel()


def test_users_create_edit_quota_and_manage(admin_page: Page, web: Web) -> None:
    page = admin_page
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto("/console/user")
    expect(page.get_by_role("heading", name="Users")).to_be_visible()

    page.get_by_role("button", name="New user").click()
    dialog = page.get_by_role("dialog", name="New user")
    dialog.get_by_label("Username").fill("alice")
    dialog.get_by_label("Display name").fill("Alice A.")
    dialog.get_by_label("Password").fill("alice-password-1")
    dialog.get_by_role("button", name="Create").click()
    expect(dialog).to_be_hidden()
    row = page.get_by_role("row").filter(has_text="alice")
    expect(row).to_contain_text("Alice A.")

    row.get_by_role("button", name="Edit alice").click()
    dialog = page.get_by_role("dialog", name="Edit user alice")
    dialog.get_by_label("Quota").fill("1000000")
    expect(dialog).to_contain_text("$2.00")  # the hint says what the units are worth
    dialog.get_by_label("Remark").fill("vip")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    expect(row).to_contain_text("$2.00")
    expect(row).to_contain_text("vip")
    alice = web.ok("GET", "/api/user/search", params={"keyword": "alice"})["items"][0]
    assert alice["quota"] == 1_000_000 and alice["remark"] == "vip"

    row.get_by_role("button", name="Disable alice").click()
    expect(row.locator(".badge")).to_have_text("Disabled")
    row.get_by_text("More").click()
    row.get_by_role("button", name="Remove 2FA alice").click()  # no 2FA to remove: the server says why
    expect(page.locator(".toast.bad")).to_contain_text("2FA")
    screenshot(page, "users")

    page.get_by_label("Username, display name, email or ID").fill("nobody-like-this")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_text("Nothing here yet.")).to_be_visible()


def test_redemption_codes_bulk_created_shown_once_and_listed(admin_page: Page) -> None:
    page = admin_page
    page.goto("/console/redemption")
    expect(page.get_by_role("heading", name="Redemption codes")).to_be_visible()
    page.get_by_role("button", name="New codes").click()
    dialog = page.get_by_role("dialog", name="New redemption codes")
    dialog.get_by_label("Name").fill("promo")
    dialog.get_by_label("Quota").fill("250000")
    expect(dialog).to_contain_text("$0.50")
    dialog.get_by_label("How many").fill("3")
    dialog.get_by_role("button", name="Create").click()

    result = page.get_by_role("dialog", name="The new codes")
    codes = result.get_by_label("The new codes").input_value().split("\n")
    assert len(codes) == 3 and all(len(c) == 32 for c in codes)
    result.get_by_role("button", name="Copy all").click()
    expect(page.locator(".toast").filter(has_text="Copied")).to_be_visible()
    with page.expect_download() as info:
        result.get_by_role("button", name="Save as a text file").click()
    saved = open(info.value.path(), encoding="utf-8").read().split()
    assert saved == codes and info.value.suggested_filename == "redemption-codes-promo.txt"
    result.get_by_role("button", name="Done").click()
    expect(result).to_be_hidden()

    rows = page.get_by_role("row").filter(has_text="promo")
    expect(rows).to_have_count(3)
    for code in codes:
        expect(page.get_by_text(code)).to_be_visible()
    screenshot(page, "redemptions")

    page.on("dialog", lambda dialog: dialog.accept())
    first = rows.first
    first.get_by_role("button", name="Disable").click()
    expect(first.locator(".badge")).to_have_text("Disabled")
    page.get_by_role("button", name="Delete invalid codes").click()
    expect(page.locator(".toast").filter(has_text="1 codes deleted")).to_be_visible()
    expect(rows).to_have_count(2)

    rows.first.get_by_role("button", name="Edit").click()
    edit = page.get_by_role("dialog", name=re.compile(r"^Edit code #\d+$"))
    edit.get_by_label("Quota").fill("500000")
    edit.get_by_role("button", name="Save").click()
    expect(edit).to_be_hidden()
    expect(rows.first).to_contain_text("$1.00")


class _Catalogue(BaseHTTPRequestHandler):
    """new-api's metadata catalogue (models.json / vendors.json under any locale)."""

    delay = 0.0  # seconds before models.json is answered (a slow upstream)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path.endswith("/models.json"):
            time.sleep(self.delay)
            body = [{"model_name": MODEL, "description": "Small and fast", "vendor_name": "OpenAI", "tags": ""}]
        elif self.path.endswith("/vendors.json"):
            body = [{"name": "OpenAI", "description": "", "icon": ""}]
        else:
            self.send_error(404)
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def catalogue(web: Web) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Catalogue)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    web.ok("PUT", "/api/option/", json={"key": "SyncUpstreamBase", "value": base})
    yield base
    server.shutdown()
    server.server_close()


def test_models_vendors_missing_models_and_upstream_sync(admin_page: Page, channel: int, catalogue: str) -> None:
    page = admin_page
    page.goto("/console/models")
    expect(page.get_by_role("heading", name="Models")).to_be_visible()
    vendors_tab = page.get_by_role("tab", name="Vendors")
    vendors_tab.click()
    expect(vendors_tab).to_have_attribute("aria-selected", "true")
    page.get_by_role("button", name="New vendor").click()
    dialog = page.get_by_role("dialog", name="New vendor")
    dialog.get_by_label("Vendor").fill("OpenAI")
    dialog.get_by_role("button", name="Create").click()
    expect(page.get_by_role("row").filter(has_text="OpenAI")).to_be_visible()

    models_tab = page.get_by_role("tab", name="Models")
    models_tab.focus()
    page.keyboard.press("ArrowLeft")  # the tablist's keys: back to the first tab
    expect(models_tab).to_have_attribute("aria-selected", "true")
    page.get_by_text("Models without metadata").click()
    page.get_by_role("button", name=f"Add metadata for {MODEL}").click()
    dialog = page.get_by_role("dialog", name="New model")
    expect(dialog.get_by_label("Model name")).to_have_value(MODEL)
    dialog.get_by_label("Vendor").select_option(label="OpenAI")
    dialog.get_by_role("button", name="Create").click()
    row = page.get_by_role("row").filter(has_text=MODEL)
    expect(row).to_contain_text("OpenAI")
    expect(row).to_contain_text("fake-openai")  # the channel serving it
    expect(page.get_by_text("Every model a channel serves has metadata.")).to_be_visible()

    page.get_by_role("button", name="Sync from upstream").click()
    dialog = page.get_by_role("dialog", name="Sync model metadata from upstream")
    expect(dialog.get_by_text("Differences (1)")).to_be_visible()
    dialog.get_by_label("description: here").check()
    _Catalogue.delay = 0.8  # the sync reads the catalogue again: slowly, so its progress shows
    try:
        dialog.get_by_role("button", name="Sync now").click()
        expect(dialog.get_by_role("status")).to_contain_text("Syncing: 0 models to create, 1 fields to overwrite")
        expect(dialog.locator("progress")).to_be_visible()
    finally:
        _Catalogue.delay = 0.0
    expect(dialog).to_contain_text("0 models created, 0 vendors created, 1 models updated")
    dialog.get_by_role("button", name="Close").click()
    expect(row).to_contain_text("Small and fast")
    screenshot(page, "models")


def test_pricing_lists_a_served_model_with_its_price_signed_out(page: Page, channel: int) -> None:
    page.goto("/pricing")
    expect(page.get_by_role("heading", name="Model pricing")).to_be_visible()
    row = page.get_by_role("row").filter(has_text=MODEL)
    # gpt-4o-mini's default ratios: model 0.075 ($0.15 / 1M in), completion 4 ($0.60 out)
    expect(row).to_contain_text("Input $0.15")
    expect(row).to_contain_text("Output $0.60")
    expect(row).to_contain_text("default")
    page.get_by_label("Unit").select_option(label="per 1K tokens")
    expect(row).to_contain_text("Input $0.00015")
    screenshot(page, "pricing")
    page.get_by_label("Search models or vendors").fill("no-such-model")
    expect(page.get_by_role("row").filter(has_text=MODEL)).to_have_count(0)
    expect(page.get_by_text("Nothing here yet.")).to_be_visible()
