"""A new user's first visit, end to end in Chromium: register, log in, create a key (shown
once, copied), chat in the playground against the fake provider and watch the reply
stream in, stop a reply, continue the conversation (the whole history goes upstream); the
chat is billed and logged. The playground's group choice reloads the models that group
serves, and the group and the sampling parameters reach the upstream request; a key's
limits (quota, expiry, models, IPs, group) round-trip through the API and back into the form."""

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
                         json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                         timeout=60)  # a loaded machine: httpx's default 5 s was seen running out
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
    # the second turn carries the whole conversation upstream (the fake echoes only the last message)
    first_turn, second_turn = (r["json"] for r in web.upstream.chat_requests()[-2:])
    assert [(m["role"], m["content"]) for m in first_turn["messages"]] == [("user", "tell me about gateways")]
    history = second_turn["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert history[0]["content"] == "tell me about gateways" and history[2]["content"] == "and a second question"
    assert "tell me about gateways" in history[1]["content"]  # the first reply, as it streamed in

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


VIP_MODEL = "gpt-4o"
PARAMETERS = (("Temperature", "temperature", 0.3), ("Top P", "top_p", 0.9),
              ("Frequency penalty", "frequency_penalty", 0.5), ("Presence penalty", "presence_penalty", -0.4),
              ("Max tokens", "max_tokens", 64))


def _vip_group(web: Web) -> None:
    """A second usable group, ``vip``, served by a channel of its own with another model."""
    groups = '{"default": "Default", "vip": "Fast lane"}'
    web.ok("PUT", "/api/option/", json={"key": "UserUsableGroups", "value": groups})
    web.ok("PUT", "/api/option/", json={"key": "GroupRatio", "value": '{"default": 1, "vip": 1}'})
    web.ok("POST", "/api/channel/", json={"mode": "single", "channel": {
        "name": "vip-line", "type": 1, "key": "sk-upstream", "base_url": web.upstream.base_url, "models": VIP_MODEL,
        "group": "vip"}})


def test_the_playground_sends_its_group_and_parameters_upstream(web: Web, page: Page) -> None:
    web.add_channel()
    _vip_group(web)
    web.ok("PUT", "/api/option/", json={"key": "QuotaForNewUser", "value": "1000000"})
    register_user(web, "carol", PASSWORD)
    log_in(page, "carol", PASSWORD)
    page.goto("/console/playground")
    model = page.get_by_label("Model")
    expect(model).to_have_value(MODEL)
    expect(model.locator("option")).to_have_text([MODEL])  # the account's group serves only MODEL

    page.get_by_label("Group").select_option("vip")
    expect(model.locator("option")).to_have_text([VIP_MODEL])  # reloaded for the group
    expect(model).to_have_value(VIP_MODEL)
    for label, _, value in PARAMETERS:
        page.get_by_label(f"Send {label}").check()
        page.get_by_label(label, exact=True).fill(str(value))
    page.get_by_label("Message").fill("hello from the fast lane")
    page.get_by_role("button", name="Send").click()
    reply = page.locator("article.message.assistant").last
    expect(reply).to_contain_text("hello from the fast lane")
    expect(reply).to_have_attribute("aria-busy", "false")

    body = web.upstream.chat_requests()[-1]["json"]
    assert body["model"] == VIP_MODEL and body["stream"] is True and "group" not in body
    sent = {name: body.get(name, body.get("max_completion_tokens") if name == "max_tokens" else None)
            for _, name, _ in PARAMETERS}
    assert sent == {name: value for _, name, value in PARAMETERS}, body
    logs = web.ok("GET", "/api/log/", params={"username": "carol", "p": 1, "page_size": 10})["items"]
    assert [(r["token_name"], r["group"], r["model_name"]) for r in logs] == [("playground-vip", "vip", VIP_MODEL)]

    # back to the account's group: its models again, and unticked parameters are not sent
    page.get_by_label("Group").select_option("")
    expect(model.locator("option")).to_have_text([MODEL])
    for label, _, _ in PARAMETERS:
        page.get_by_label(f"Send {label}").uncheck()
    page.get_by_label("Message").fill("plain again")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("article.message.assistant").last).to_contain_text("plain again")
    body = web.upstream.chat_requests()[-1]["json"]
    assert body["model"] == MODEL
    assert not {"temperature", "top_p", "frequency_penalty", "presence_penalty", "max_tokens"} & set(body), body


def test_a_key_s_limits_round_trip(web: Web, page: Page) -> None:
    _vip_group(web)
    register_user(web, "dave", PASSWORD)
    log_in(page, "dave", PASSWORD)
    page.goto("/console/token")
    page.get_by_role("button", name="New key").click()
    form = page.get_by_role("dialog", name="New key")
    form.get_by_label("Name", exact=True).fill("limited")
    form.get_by_label("Quota (units)").fill("250000")
    form.get_by_label("Expires").fill("2030-01-02T03:04")
    form.get_by_label("Group").select_option("vip")
    form.get_by_label("Only these models").check()
    form.get_by_label("Models (comma-separated)").fill(f"{MODEL}, {VIP_MODEL}")
    form.get_by_label("Allowed IPs (one per line, CIDR allowed)").fill("10.0.0.0/8\n127.0.0.1")
    form.get_by_role("button", name="Save").click()
    expect(page.get_by_test_id("new-key")).to_contain_text("sk-")
    # its close button, not Escape: a key pressed before the dialog has opened as modal is lost
    created = page.get_by_role("dialog", name="Your new key")
    created.get_by_role("button", name="Close").click()
    expect(created).to_be_hidden()

    uid = page.evaluate("localStorage.getItem('uid')")
    expires = page.evaluate("Math.floor(new Date('2030-01-02T03:04').getTime() / 1000)")  # the browser's local time

    def stored() -> dict:  # type: ignore[type-arg]
        got = page.request.get("/api/token/search?keyword=limited", headers={"New-Api-User": uid}).json()
        [row] = got["data"]["items"]
        return row  # type: ignore[no-any-return]

    row = stored()
    assert (row["remain_quota"], row["unlimited_quota"], row["expired_time"], row["group"]) == (
        250000, False, expires, "vip")
    assert row["model_limits_enabled"] is True and row["model_limits"] == f"{MODEL},{VIP_MODEL}"
    assert row["allow_ips"] == "10.0.0.0/8\n127.0.0.1"

    # back into the form as saved, then one change saved
    line = page.get_by_role("row").filter(has_text="limited")
    expect(line).to_contain_text("vip")
    line.get_by_role("button", name="Edit").click()
    form = page.get_by_role("dialog", name="Edit key")
    expect(form.get_by_label("Quota (units)")).to_have_value("250000")
    expect(form.get_by_label("Expires")).to_have_value("2030-01-02T03:04")
    expect(form.get_by_label("Group")).to_have_value("vip")
    expect(form.get_by_label("Only these models")).to_be_checked()
    expect(form.get_by_label("Models (comma-separated)")).to_have_value(f"{MODEL},{VIP_MODEL}")
    expect(form.get_by_label("Allowed IPs (one per line, CIDR allowed)")).to_have_value("10.0.0.0/8\n127.0.0.1")
    form.get_by_label("Quota (units)").fill("300000")
    form.get_by_label("Expires").fill("")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    row = stored()
    assert (row["remain_quota"], row["expired_time"], row["group"], row["model_limits_enabled"]) == (
        300000, -1, "vip", True)
