"""Model output is untrusted: the fake provider echoes hostile Markdown and HTML into the
playground, and nothing of it runs (the sanitizer drops it); were markup to slip through,
the page's Content-Security-Policy refuses to run it (second test)."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

from faregate_web.testing import MODEL, ROOT_PASSWORD, Web, log_in

HOSTILE = [
    '<img src=x onerror="window.__pwned=1">',
    "<script>window.__pwned=2</script>",
    "[click me](javascript:window.__pwned=3)",
    '<svg onload="window.__pwned=4"></svg><iframe src="javascript:window.__pwned=5"></iframe>',
    '<a href="javascript:window.__pwned=6" onclick="window.__pwned=7">x</a><style>body{display:none}</style>',
    '<form action="https://evil.example"><input name=p><button>go</button></form>',
]


def test_hostile_model_output_is_shown_as_text_and_never_runs(web: Web, page: Page) -> None:
    web.add_channel(name="hostile", models=MODEL)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    log_in(page, "root", ROOT_PASSWORD)
    page.goto("/console/playground")
    expect(page.get_by_label("Model")).to_have_value(MODEL)
    for i, text in enumerate(HOSTILE):
        page.get_by_label("Message").fill(text)
        page.get_by_role("button", name="Send").click()
        expect(page.locator("article.message.assistant")).to_have_count(i + 1)
        expect(page.locator("article.message.assistant").last).to_have_attribute("aria-busy", "false")
    replies = page.locator("article.message.assistant .content")
    assert replies.locator("script, img, svg, iframe, style, form, input, object, embed").count() == 0
    for link in replies.locator("a").all():
        href = link.get_attribute("href") or ""
        assert not href.lower().startswith("javascript"), href
        link.click()  # a link without a safe href does nothing
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned") is None and dialogs == []
    # what was written stays visible, as text: the prompt, and the HTML the model echoed
    expect(page.locator("article.message.user").first).to_contain_text(HOSTILE[0])
    expect(replies.first).to_contain_text('<img src=x onerror="window.__pwned=1">')


def test_the_policy_refuses_inline_script_even_if_markup_slipped_through(web: Web, browser: Browser) -> None:
    ctx = browser.new_context(base_url=web.base_url)
    try:
        page = ctx.new_page()
        violations: list[str] = []
        page.on("console", lambda m: violations.append(m.text) if m.type == "error" else None)
        page.goto("/login")
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
        page.evaluate("""() => {
            const box = document.createElement('div')
            box.innerHTML = '<img src="data:," onerror="window.__pwned=1">'
            document.body.append(box)
            const s = document.createElement('script')
            s.textContent = 'window.__pwned = 2'
            document.body.append(s)
        }""")
        page.wait_for_timeout(300)
        assert page.evaluate("window.__pwned") is None
        assert any("Content Security Policy" in v for v in violations), violations
    finally:
        ctx.close()
