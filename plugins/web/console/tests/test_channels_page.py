"""The channels page (admin): add an OpenAI channel through the form, find it in the table,
test it, change its priority and weight in place, update its balance from its row, disable
and enable it; the key fields of Azure, AWS Bedrock and Vertex (their hints, a regional
endpoint instead of a required base URL)."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from faregate_web.testing import MODEL, Web, screenshot


def test_add_test_prioritise_and_toggle_a_channel(admin_page: Page, web: Web) -> None:
    page = admin_page
    page.goto("/console/channel")
    expect(page.get_by_role("heading", name="Channels", exact=True)).to_be_visible()

    page.get_by_role("button", name="Add channel").click()
    form = page.get_by_role("dialog", name="Add a channel")
    form.get_by_label(re.compile(r"^Type")).select_option("1")
    form.get_by_label(re.compile(r"^Name")).fill("web-openai")
    form.get_by_label(re.compile(r"^Key\b")).fill("sk-upstream")
    form.get_by_label(re.compile(r"^Base URL")).fill(web.upstream.base_url)
    form.get_by_label(re.compile(r"^Models")).fill(MODEL)
    form.get_by_role("button", name="Create").click()
    expect(form).to_be_hidden()

    row = page.get_by_role("row").filter(has_text="web-openai")
    expect(row).to_be_visible()
    expect(row.get_by_text("OpenAI", exact=True)).to_be_visible()
    expect(row.get_by_text("Enabled", exact=True)).to_be_visible()

    row.get_by_role("button", name="Test web-openai").click()
    probe = page.get_by_role("dialog", name="Test web-openai")
    expect(probe.get_by_label("Test model")).to_have_value(MODEL)
    probe.get_by_role("button", name="Run the test").click()
    expect(probe.get_by_text(re.compile(r"The test succeeded in [\d.]+ s"))).to_be_visible(timeout=20_000)
    probe.get_by_role("button", name="Close").click()
    expect(probe).to_be_hidden()

    priority = row.get_by_label("Priority of web-openai")
    priority.fill("7")
    priority.press("Enter")
    expect(page.get_by_text("Priority of web-openai saved")).to_be_visible()
    expect(row.get_by_label("Priority of web-openai")).to_have_value("7")
    weight = row.get_by_label("Weight of web-openai")
    weight.fill("5")
    weight.press("Enter")
    expect(page.get_by_text("Weight of web-openai saved")).to_be_visible()
    expect(row.get_by_label("Weight of web-openai")).to_have_value("5")
    [channel] = web.ok("GET", "/api/channel/search", params={"keyword": "web-openai"})["items"]
    assert channel["priority"] == 7 and channel["weight"] == 5
    assert channel["base_url"] == web.upstream.base_url and channel["models"] == MODEL

    # the row's balance button asks the upstream (the fake's billing routes) and shows it
    row.get_by_role("button", name="Update the balance of web-openai").click()
    expect(page.get_by_text(re.compile(r"^Balance of web-openai: \$\d+\.\d\d$"))).to_be_visible()
    balance = web.ok("GET", f"/api/channel/{channel['id']}")["balance"]
    expect(row).to_contain_text(f"${balance:.2f}")

    row.get_by_role("button", name="Disable web-openai").click()
    expect(row.get_by_text("Disabled", exact=True)).to_be_visible()
    assert web.ok("GET", f"/api/channel/{channel['id']}")["status"] == 2
    row.get_by_role("button", name="Enable web-openai").click()
    expect(row.get_by_text("Enabled", exact=True)).to_be_visible()
    assert web.ok("GET", f"/api/channel/{channel['id']}")["status"] == 1
    screenshot(page, "channels")


def test_test_all_shows_progress_and_a_multi_key_channel_manages_its_keys(admin_page: Page, web: Web) -> None:
    from faregate.testing.harness import free_port

    def add(name: str, key: str, base_url: str, mode: str = "single") -> None:
        web.ok("POST", "/api/channel/", json={"mode": mode, "multi_key_mode": "random", "channel": {
            "name": name, "type": 1, "key": key, "base_url": base_url, "models": MODEL, "group": "default",
            "tag": "night"}})

    add("two-keys", "sk-one\nsk-two", web.upstream.base_url, mode="multi_to_single")
    add("dead-line", "sk-dead", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    page = admin_page
    page.goto("/console/channel")
    page.get_by_role("button", name="Test all channels").click()
    panel = page.get_by_role("region", name="Test all channels")
    panel.get_by_role("button", name="Start").click()
    status = panel.get_by_role("status")
    expect(status).to_contain_text("finished", timeout=30_000)
    expect(status).to_contain_text("1 failed")
    expect(panel.locator("progress")).to_have_attribute("value", re.compile(r"^[1-9]"))
    expect(panel.get_by_role("listitem")).to_contain_text("dead-line")
    screenshot(page, "channels-test-all")

    page.get_by_role("button", name="Keys of two-keys").click()
    keys = page.get_by_role("dialog", name="Keys of two-keys")
    expect(keys).to_contain_text("2 enabled")
    keys.get_by_role("button", name="Disable key 1").click()
    expect(keys).to_contain_text("1 enabled, 1 disabled")

    page.get_by_role("dialog", name="Keys of two-keys").get_by_role("button", name="Close").click()
    page.get_by_role("button", name="Update all balances").click()
    expect(page.get_by_text(re.compile(r"^Balances: \d+ of \d+ updated"))).to_be_visible(timeout=30_000)

    # a tag's channels edited at once (new-api's tag edit): priority set, the tag renamed
    page.locator("input[name=tag-ops]").fill("night")
    page.get_by_role("button", name="Edit the tag").click()
    edit = page.get_by_role("dialog", name="Channels tagged night")
    edit.get_by_label("Priority").fill("9")
    edit.get_by_label("Rename the tag to").fill("day")
    edit.get_by_role("button", name="Save").click()
    expect(page.get_by_text("2 channels tagged night changed")).to_be_visible()
    tagged = web.ok("GET", "/api/channel/search", params={"keyword": "day"})["items"]
    assert sorted((c["name"], c["priority"], c["tag"]) for c in tagged) == [("dead-line", 9, "day"),
                                                                            ("two-keys", 9, "day")]


def test_azure_bedrock_and_vertex_key_fields(admin_page: Page, web: Web) -> None:
    page = admin_page
    page.goto("/console/channel")
    page.get_by_role("button", name="Add channel").click()
    form = page.get_by_role("dialog", name="Add a channel")
    base_url = form.get_by_label(re.compile(r"^Base URL"))

    form.get_by_label(re.compile(r"^Type")).select_option("3")  # Azure: the resource's URL and an API version
    expect(form).to_contain_text("The Azure OpenAI resource's key")
    expect(form.get_by_label(re.compile(r"^API version"))).to_be_visible()
    expect(base_url).to_have_attribute("required", "")

    form.get_by_label(re.compile(r"^Type")).select_option("33")  # Bedrock: AK|SK|region, no base URL
    expect(form).to_contain_text("AK|SK|region")
    expect(form).to_contain_text("Empty: the region's endpoint.")
    expect(base_url).not_to_have_attribute("required", "")
    form.get_by_label(re.compile(r"^Name")).fill("bedrock-line")
    form.get_by_label(re.compile(r"^Key\b")).fill("AKIAIOSFODNN7EXAMPLE|wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY|us-west-2")
    form.get_by_label(re.compile(r"^Region")).fill("us-west-2")
    form.get_by_label(re.compile(r"^Models")).fill("claude-3-5-haiku-20241022")
    form.get_by_role("button", name="Create").click()
    expect(form).to_be_hidden()
    [bedrock] = web.ok("GET", "/api/channel/search", params={"keyword": "bedrock-line"})["items"]
    assert (bedrock["type"], bedrock["base_url"], bedrock["other"]) == (33, "", "us-west-2")

    page.get_by_role("button", name="Add channel").click()
    form = page.get_by_role("dialog", name="Add a channel")
    form.get_by_label(re.compile(r"^Type")).select_option("41")  # Vertex: a service account's JSON, a region
    expect(form).to_contain_text("The service account's JSON key file")
    expect(form.get_by_label(re.compile(r"^Region"))).to_be_visible()
    expect(form.get_by_label(re.compile(r"^Base URL"))).not_to_have_attribute("required", "")
    form.get_by_role("button", name="Cancel").click()
