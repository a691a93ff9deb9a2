"""A new user's first visit, end to end in Chromium: register, log in, create a key (shown
once, copied), chat in the playground against the fake provider and watch the reply
stream in, stop a reply, continue the conversation; the chat is billed and logged."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from faregate_adapter_openai.testing import Fault
from faregate_web.testing import MODEL, Web, log_in, register_user, screenshot

PASSWORD = "journey-password-1"


def _user_self(web: Web, username: str) -> dict:  # type: ignore[type-arg]
    rows = web.ok("GET", "/api/user/search", params={"keyword": username})["items"]
    return next(r for r in rows if r["username"] == username)


def test_register_log_in_create_a_key_and_chat(web: Web, page: Page) -> None:
    web.add_channel()
    web.ok("PUT", "/api/option/", json={"key": "QuotaForNewUser", "value": "1000000"})
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/register")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Repeat the password").fill(PASSWORD)
    screenshot(page, "register")
    page.get_by_role("button", name="Register").click()
    page.wait_for_url("**/login")
    log_in(page, "alice", PASSWORD)

    # a key: created, shown once, copied, and it works against the relay
    page.get_by_role("link", name="API keys").click()
    page.get_by_role("button", name="New key").click()
    page.get_by_label("Name", exact=True).fill("laptop")
    page.get_by_role("button", name="Save").click()
    shown = page.get_by_test_id("new-key")
    expect(shown).to_contain_text("sk-")
    key = shown.inner_text().strip()
    page.get_by_role("dialog").get_by_role("button", name="Copy key").click()
    assert page.evaluate("navigator.clipboard.readText()") == key
    page.keyboard.press("Escape")
    expect(page.get_by_role("cell", name="laptop", exact=True)).to_be_visible()
    screenshot(page, "keys")
    relayed = httpx.post(web.base_url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                         json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
    assert relayed.status_code == 200, relayed.text

    # the playground: the reply streams in (held after its first chunks), then a second turn
    before = _user_self(web, "alice")["quota"]
    page.get_by_role("link", name="Playground").click()
    expect(page.get_by_label("Model")).to_have_value(MODEL)
    web.upstream.push_fault(Fault("stall", after_chunks=3, delay=1.5))
    page.get_by_label("Message").fill("tell me about gateways")
    page.get_by_role("button", name="Send").click()
    reply = page.locator("article.message.assistant").last
    expect(reply).to_have_attribute("aria-busy", "true")
    expect(reply.locator(".content")).not_to_be_empty()  # part of the reply, while the rest is held
    assert reply.get_attribute("aria-busy") == "true"
    expect(reply).to_have_attribute("aria-busy", "false", timeout=10_000)
    expect(reply).to_contain_text("tell me about gateways")
    page.get_by_label("Message").fill("and a second question")
    page.get_by_label("Message").press("Control+Enter")
    expect(page.locator("article.message.assistant")).to_have_count(2)
    expect(page.locator("article.message.assistant").last).to_contain_text("and a second question", timeout=10_000)
    screenshot(page, "playground")

    # billed to the user's wallet and logged under the playground's key name
    after = _user_self(web, "alice")["quota"]
    assert after < before
    logs = web.ok("GET", "/api/log/", params={"username": "alice", "p": 1, "page_size": 50})["items"]
    assert sum(1 for row in logs if str(row.get("token_name", "")).startswith("playground")) == 2


def test_a_reply_can_be_stopped(web: Web, page: Page) -> None:
    web.ok("PUT", "/api/option/", json={"key": "QuotaForNewUser", "value": "1000000"})
    register_user(web, "bob", PASSWORD)
    log_in(page, "bob", PASSWORD)
    page.goto("/console/playground")
    expect(page.get_by_label("Model")).to_have_value(MODEL)
    web.upstream.push_fault(Fault("stall", after_chunks=2, delay=3))
    page.get_by_label("Message").fill("a long story please")
    page.get_by_role("button", name="Send").click()
    reply = page.locator("article.message.assistant").last
    expect(reply.locator(".content")).not_to_be_empty()
    page.get_by_role("button", name="Stop").click()
    expect(reply).to_contain_text("(stopped)")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
