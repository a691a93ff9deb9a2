"""Signing in with outside accounts in Chromium, against the sign-in plugins' local fakes: the
login and register pages offer exactly the methods the site turned on; GitHub signs a new
user up with the invitation code and logs them in again (the server's flow with PKCE, back
through new-api's /oauth/<provider> page); a user links OIDC and WeChat (the QR code from
another origin, allowed by the policy for that origin only) in the personal settings and
unlinks one; WeChat signs up (by keyboard); Telegram's redirect login (oauth.telegram.org stood in for by
the browser's request interception, answering with data signed as Telegram signs it) links
an account, then logs it in through its 2FA step."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pyotp
import pytest
from aiohttp import web as aioweb
from playwright.sync_api import Browser, Page, Route, expect

from faregate.testing.harness import GatewayProcess, free_port
from faregate_auth_oauth.testing import CLIENT_ID, CLIENT_SECRET, USERS, FakeOAuthProvider
from faregate_auth_telegram.widget import sign
from faregate_auth_wechat.testing import TOKEN, FakeWeChatServer
from faregate_web.shell import image_origin
from faregate_web.testing import PageErrors, ThreadedFake, Web, log_in, register_user, screenshot

PASSWORD = "outside-password-1"
BOT_TOKEN = "123456:bot-token-for-console-tests"
#: a 1×1 PNG: the official account's QR code, served from another origin
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
                       "AAAABJRU5ErkJggg==")


class Outside:
    """The fake GitHub and OIDC providers, the fake WeChat server and the QR code's host, on
    their own event loop in a thread (the browser tests are sync)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.github = FakeOAuthProvider("github", user=dict(USERS["github"]))
        self.oidc = FakeOAuthProvider("oidc", user=dict(USERS["oidc"]))
        self.wechat = FakeWeChatServer()
        self.fakes: list[Any] = [self.github, self.oidc, self.wechat]
        for fake in self.fakes:
            self.call(fake.__aenter__())
        self.qr_port = free_port()
        self.call(self._serve_qr())

    async def _serve_qr(self) -> None:
        async def qr(request: aioweb.Request) -> aioweb.Response:
            return aioweb.Response(body=PNG, content_type="image/png")

        app = aioweb.Application()
        app.router.add_get("/qr.png", qr)
        self.qr_runner = aioweb.AppRunner(app)
        await self.qr_runner.setup()
        await aioweb.TCPSite(self.qr_runner, "127.0.0.1", self.qr_port).start()

    @property
    def qr_url(self) -> str:
        return f"http://127.0.0.1:{self.qr_port}/qr.png"

    def call(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(30)

    def close(self) -> None:
        self.call(self.qr_runner.cleanup())
        for fake in self.fakes:
            self.call(fake.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="module")
def outside() -> Iterator[Outside]:
    fakes = Outside()
    yield fakes
    fakes.close()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory, upstream: ThreadedFake, outside: Outside) -> Iterator[Web]:
    """The console's gateway with GitHub, OIDC, WeChat and Telegram sign-in turned on (Discord
    and Linux DO off), each against its fake."""
    proc = GatewayProcess(str(tmp_path_factory.mktemp("outside") / "data"), env={
        "FAREGATE_OAUTH_PRIVATE_ADDRESSES": "allow", "FAREGATE_OAUTH_GITHUB_BASE_URL": outside.github.base_url})
    proc.start()
    site = Web(proc, upstream)
    for key, value in (("ServerAddress", site.base_url), ("QuotaForInvitee", "70"),
                       ("GitHubClientId", CLIENT_ID), ("GitHubClientSecret", CLIENT_SECRET),
                       ("GitHubOAuthEnabled", "true"),
                       ("oidc.client_id", CLIENT_ID), ("oidc.client_secret", CLIENT_SECRET),
                       ("oidc.well_known", outside.oidc.base_url + "/.well-known/openid-configuration"),
                       ("oidc.enabled", "true"),
                       ("WeChatServerAddress", outside.wechat.base_url), ("WeChatServerToken", TOKEN),
                       ("WeChatAccountQRCodeImageURL", outside.qr_url), ("WeChatAuthEnabled", "true"),
                       ("TelegramBotName", "faregate_bot"), ("TelegramBotToken", BOT_TOKEN),
                       ("TelegramOAuthEnabled", "true")):
        site.ok("PUT", "/api/option/", json={"key": key, "value": value})
    yield site
    site.close()


def _uid(page: Page) -> int:
    return int(page.evaluate("localStorage.getItem('uid')"))


def _bindings(web: Web, user_id: int) -> dict[str, str]:
    return {b["provider"]: b["provider_user_id"] for b in web.ok("GET", f"/api/user/{user_id}/oauth/bindings")}


def _user_client(web: Web, username: str) -> httpx.Client:
    client = httpx.Client(base_url=web.base_url, timeout=30)
    user = client.post("/api/user/login", json={"username": username, "password": PASSWORD}).json()["data"]
    client.headers["New-Api-User"] = str(user["id"])
    return client


def test_the_policy_allows_images_from_the_qr_code_s_origin_only(web: Web, outside: Outside) -> None:
    csp = httpx.get(web.base_url + "/login").headers["content-security-policy"]
    assert f"img-src 'self' data: {image_origin(outside.qr_url)};" in csp
    assert image_origin(outside.qr_url) == f"http://127.0.0.1:{outside.qr_port}"
    # nothing but a plain origin gets into the policy
    for hostile in ("https://a.example;script-src *", "https://a.example 'unsafe-inline'/x.png", "javascript:x",
                    "https://user:pw@a.example/x.png", "/assets/qr.png", "data:image/png;base64,AA", "https://"):
        assert image_origin(hostile) is None, hostile
    assert image_origin("https://IMG.example.com:8443/a/qr.png?x=1") == "https://img.example.com:8443"


def test_github_signs_a_new_user_up_with_the_invitation_then_logs_them_in(web: Web, page: Page,
                                                                           outside: Outside) -> None:
    aff = web.ok("GET", "/api/user/aff")
    page.goto(f"/register?aff={aff}")
    methods = page.get_by_role("group", name="Or continue with")
    # the methods that are on, Telegram aside (it logs in bound accounts only)
    expect(methods.get_by_role("button")).to_have_text(
        ["Continue with GitHub", "Continue with OIDC", "Continue with WeChat"])
    screenshot(page, "register-outside")
    methods.get_by_role("button", name="Continue with GitHub").click()
    page.wait_for_url("**/console")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()
    octo = web.ok("GET", f"/api/user/{_uid(page)}")
    assert octo["username"] == "octo" and _bindings(web, octo["id"]) == {"github": "4242"}
    assert (octo["inviter_id"], octo["quota"]) == (int(web.root.headers["New-Api-User"]), 70)
    # the server's flow, back through new-api's page: PKCE and new-api's redirect URI
    start = [params for method, path, params in outside.github.seen if method == "GET" and "authorize" in path][-1]
    assert start["redirect_uri"] == f"{web.base_url}/oauth/github" and start["code_challenge_method"] == "S256"

    page.wait_for_load_state("networkidle")  # the page's reads answered: a logout ends their session
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/login")
    expect(methods.get_by_role("button")).to_have_text(
        ["Continue with GitHub", "Continue with OIDC", "Continue with WeChat", "Continue with Telegram"])
    screenshot(page, "login-outside")
    page.goto("/login?next=/console/token")
    methods.get_by_role("button", name="Continue with GitHub").click()
    page.wait_for_url("**/console/token")  # where the login page was to go
    assert _uid(page) == octo["id"]  # the same account, found by GitHub's id


def test_linking_and_unlinking_in_the_personal_settings(web: Web, page: Page, outside: Outside) -> None:
    register_user(web, "linker", PASSWORD)
    log_in(page, "linker", PASSWORD)
    page.goto("/console/personal")
    section = page.get_by_role("region", name="Linked accounts")
    expect(section.get_by_role("button")).to_have_text(["Link GitHub", "Link OIDC", "Link WeChat", "Link Telegram"])
    section.get_by_role("button", name="Link OIDC").click()  # the same OAuth flow binds while logged in
    page.wait_for_url("**/console/personal")
    expect(page.get_by_role("status").filter(has_text="Your OIDC account is linked.")).to_be_visible()
    expect(section.get_by_role("row").filter(has_text="oidc-subject-1")).to_contain_text("OIDC")
    expect(section.get_by_role("button", name="Link OIDC")).to_have_count(0)

    outside.wechat.codes["424242"] = "openid-linker"
    section.get_by_role("button", name="Link WeChat").click()
    dialog = page.get_by_role("dialog", name="WeChat")
    expect(dialog.get_by_role("img", name="The official account’s QR code")).to_be_visible()
    page.wait_for_function("() => document.querySelector('img.qr').naturalWidth > 0")  # loaded, not refused
    screenshot(page, "wechat-dialog")
    dialog.get_by_label("Verification code").fill("424242")
    dialog.get_by_role("button", name="Continue").click()
    expect(section.get_by_role("row").filter(has_text="openid-linker")).to_contain_text("WeChat")
    screenshot(page, "personal-linked")

    page.once("dialog", lambda confirm: confirm.accept())
    section.get_by_role("row").filter(has_text="oidc-subject-1").get_by_role("button", name="Unlink").click()
    expect(section.get_by_role("button", name="Link OIDC")).to_be_visible()
    assert _bindings(web, _uid(page)) == {"wechat": "openid-linker"}


def test_wechat_signs_up_with_the_code_the_official_account_gave(web: Web, page: Page, outside: Outside) -> None:
    outside.wechat.codes["515151"] = "openid-newcomer"
    page.goto("/login")
    # by keyboard: the button opens the dialog, focus moves into it, Enter sends the code
    page.get_by_role("button", name="Continue with WeChat").focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="WeChat")
    expect(dialog).to_be_visible()
    assert page.evaluate("document.activeElement.closest('dialog') !== null")
    dialog.get_by_label("Verification code").fill("515151")
    page.keyboard.press("Enter")
    page.wait_for_url("**/console")
    newcomer = web.ok("GET", f"/api/user/{_uid(page)}")
    assert newcomer["username"].startswith("wechat_")
    assert _bindings(web, newcomer["id"]) == {"wechat": "openid-newcomer"}


def _telegram(page: Page, telegram_id: int, seen: list[dict[str, str]]) -> None:
    """oauth.telegram.org as the browser meets it: back to ``return_to`` with the user's data,
    signed as Telegram signs it, in the fragment (numbers as JSON numbers, a non-ASCII name)."""
    since = int(time.time())

    def answer(route: Route) -> None:
        params = dict(parse_qsl(urlsplit(route.request.url).query))
        seen.append(params)
        # each answer a new signed set (its own auth_date): a set logs in once
        fields = sign({"id": str(telegram_id), "first_name": "Tële 电报", "username": "tele",
                       "auth_date": str(since - len(seen))}, BOT_TOKEN)
        data = {**fields, "id": telegram_id, "auth_date": int(fields["auth_date"])}
        result = base64.urlsafe_b64encode(json.dumps(data, ensure_ascii=False).encode()).decode().rstrip("=")
        route.fulfill(status=302, headers={"Location": f"{params['return_to']}#tgAuthResult={result}"})

    page.route("https://oauth.telegram.org/**", answer)


def test_telegram_links_an_account_then_logs_it_in_through_its_2fa(web: Web, page: Page) -> None:
    register_user(web, "tele", PASSWORD)
    seen: list[dict[str, str]] = []
    _telegram(page, 987654321, seen)
    log_in(page, "tele", PASSWORD)
    page.goto("/console/personal")
    page.get_by_role("button", name="Link Telegram").click()
    page.wait_for_url("**/console/personal")
    expect(page.get_by_role("status").filter(has_text="Your Telegram account is linked.")).to_be_visible()
    section = page.get_by_role("region", name="Linked accounts")
    expect(section.get_by_role("row").filter(has_text="987654321")).to_contain_text("Telegram")
    assert seen[0] == {"bot_id": "123456", "origin": web.base_url, "return_to": f"{web.base_url}/oauth/telegram"}

    tele = _user_client(web, "tele")
    setup = tele.post("/api/user/2fa/setup").json()["data"]
    enabled = tele.post("/api/user/2fa/enable", json={"code": pyotp.TOTP(setup["secret"]).now()}).json()
    tele.close()
    assert enabled["success"], enabled
    page.wait_for_load_state("networkidle")  # the page's reads answered: a logout ends their session
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/login")
    page.get_by_role("button", name="Continue with Telegram").click()
    code = page.get_by_label("Two-factor code")  # the provider alone is not enough
    expect(code).to_be_visible()
    assert "tgAuthResult" not in page.url  # the signed data left the address bar
    code.fill(setup["backup_codes"][0])
    page.get_by_role("button", name="Verify").click()
    page.wait_for_url("**/console")
    assert web.ok("GET", f"/api/user/{_uid(page)}")["username"] == "tele"


@pytest.fixture
def refused_page(browser: Browser, web: Web) -> Iterator[Page]:
    """A page whose one expected browser note is the callback's 403 (a state this browser was
    never given)."""
    ctx = browser.new_context(base_url=web.base_url, locale="en-US")
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    errors = PageErrors(page)
    yield page
    ctx.close()
    refusal = "console error: Failed to load resource: the server responded with a status of 403"
    assert len(errors.seen) == 1 and errors.seen[0].startswith(refusal), "\n".join(errors.seen)


def test_a_return_with_someone_else_s_state_says_why(refused_page: Page) -> None:
    page = refused_page
    page.goto("/oauth/github?code=stolen&state=someone-elses")
    expect(page.get_by_role("alert")).to_contain_text("the OAuth state is invalid")
    expect(page.get_by_role("link", name="Back to the login page")).to_be_visible()
    expect(page.get_by_role("button", name="Log out")).to_have_count(0)
