"""The browser test kit of the web console: a real gateway process with the web plugin,
the fake OpenAI provider behind it, and Debian's Chromium driven by Playwright (never a
downloaded browser). Every page fixture fails its test on any console error or uncaught
exception. Needs ``playwright`` (a test dependency; the plugin itself does not).

Screenshots go to ``$FAREGATE_ARTIFACTS/web``, else ``test-artifacts/web`` under pytest's
root directory (the repository): the pages' pictures a run leaves behind. At the end of the
run every screenshot it took must be there, a non-empty PNG."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright

from faregate.testing.harness import GatewayProcess
from faregate_adapter_openai.testing import FakeOpenAI, Fault

CHROMIUM = os.environ.get("FAREGATE_CHROMIUM", "/usr/bin/chromium")
ROOT_PASSWORD = "web-root-password"
MODEL = "gpt-4o-mini"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: the pages a signed-in root can open (the router's main pages), for loops over them all
MAIN_PAGES = ("/", "/about", "/pricing", "/console", "/console/playground", "/console/token", "/console/log",
              "/console/topup", "/console/personal", "/console/channel", "/console/user", "/console/redemption",
              "/console/models", "/console/setting")
# the flags the machine notes give for a closed network: no background connections
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


class ThreadedFake:
    """The fake OpenAI provider on its own event loop in a thread (the tests are sync)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.fake = FakeOpenAI("127.0.0.1", 0, models=[MODEL])
        self.call(self.fake.start())

    def call(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(30)

    @property
    def base_url(self) -> str:
        return str(self.fake.base_url)

    def chat_requests(self) -> list[dict[str, Any]]:
        """The chat requests the fake received, oldest first (each ``{path, headers, json, …}``)."""
        return [r for r in list(self.fake.requests) if r["path"].endswith("/chat/completions")]

    def push_fault(self, fault: Fault) -> None:
        self.loop.call_soon_threadsafe(self.fake.push_fault, fault)

    def close(self) -> None:
        self.call(self.fake.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@dataclass
class Web:
    """A running gateway (set up, root signed in over httpx for test arrangements)."""

    proc: GatewayProcess
    upstream: ThreadedFake
    root: httpx.Client = field(init=False)

    @property
    def base_url(self) -> str:
        return self.proc.base_url

    def __post_init__(self) -> None:
        self.root = httpx.Client(base_url=self.base_url, timeout=30)
        self.root.post("/api/setup", json={"username": "root", "password": ROOT_PASSWORD,
                                           "confirmPassword": ROOT_PASSWORD}).raise_for_status()
        user = self.ok("POST", "/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})
        self.root.headers["New-Api-User"] = str(user["id"])

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        body = self.root.request(method, path, **kwargs).json()
        assert body["success"], body
        return body.get("data")

    def add_channel(self, name: str = "fake-openai", models: str = MODEL) -> int:
        return int(self.ok("POST", "/api/channel/", json={"mode": "single", "channel": {
            "name": name, "type": 1, "key": "sk-upstream", "base_url": self.upstream.base_url, "models": models,
            "group": "default"}}))

    def close(self) -> None:
        self.root.close()
        self.proc.stop()


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedFake]:
    fake = ThreadedFake()
    yield fake
    fake.close()


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory, upstream: ThreadedFake) -> Iterator[Web]:
    proc = GatewayProcess(str(tmp_path_factory.mktemp("web") / "data"))
    proc.start()
    site = Web(proc, upstream)
    yield site
    site.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for one test module: the sync API runs an event loop in this thread while
    it is open, so it must be closed before another module's asyncio tests run here."""
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium is not at {CHROMIUM}: apt-get install -y chromium (or set FAREGATE_CHROMIUM)")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


class PageErrors:
    def __init__(self, page: Page) -> None:
        self.seen: list[str] = []
        page.on("console", self.console)
        page.on("pageerror", lambda exc: self.seen.append(f"uncaught: {exc}"))

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.seen.append(f"console error: {message.text} ({message.location.get('url', '')})")


def _page(browser: Browser, web: Web, **context: Any) -> Iterator[Page]:
    ctx = browser.new_context(base_url=web.base_url, **context)
    page = ctx.new_page()
    page.set_default_timeout(10_000)
    errors = PageErrors(page)
    yield page
    ctx.close()
    assert not errors.seen, "\n".join(errors.seen)


@pytest.fixture
def page(browser: Browser, web: Web) -> Iterator[Page]:
    """A fresh browser context (no cookies), English, desktop size."""
    yield from _page(browser, web, locale="en-US", viewport={"width": 1280, "height": 800})


@pytest.fixture
def phone_page(browser: Browser, web: Web) -> Iterator[Page]:
    yield from _page(browser, web, locale="en-US", viewport={"width": 390, "height": 844}, is_mobile=True,
                     has_touch=True)


def log_in(page: Page, username: str, password: str) -> None:
    page.goto("/login")
    page.get_by_label("Username or email").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in", exact=True).click()
    page.wait_for_url("**/console")


@pytest.fixture
def admin_page(page: Page, web: Web) -> Page:
    """``page``, signed in as root."""
    log_in(page, "root", ROOT_PASSWORD)
    return page


def register_user(web: Web, username: str, password: str = "user-password-1") -> None:
    """A user made through the API (for tests whose subject is not registration)."""
    body = httpx.post(web.base_url + "/api/user/register",
                      json={"username": username, "password": password, "password2": password}).json()
    assert body["success"], body


class Artifacts:
    """Where this run's screenshots go, and which it took."""

    folder = Path(os.environ.get("FAREGATE_ARTIFACTS", "test-artifacts")) / "web"
    taken: list[Path] = []


def is_png(path: Path) -> bool:
    """A non-empty PNG file (its signature and more)."""
    with path.open("rb") as f:
        head = f.read(len(PNG_SIGNATURE) + 1)
    return head.startswith(PNG_SIGNATURE) and len(head) > len(PNG_SIGNATURE)


@pytest.fixture(scope="session", autouse=True)
def web_artifacts(request: pytest.FixtureRequest) -> Iterator[Path]:
    """The screenshots' folder (``$FAREGATE_ARTIFACTS/web`` or ``<pytest root>/test-artifacts/web``);
    at the end of the run, each screenshot taken must be there as a PNG."""
    base = os.environ.get("FAREGATE_ARTIFACTS")
    Artifacts.folder = (Path(base) if base else request.config.rootpath / "test-artifacts") / "web"
    yield Artifacts.folder
    missing = [str(p) for p in Artifacts.taken if not p.is_file() or not is_png(p)]
    assert not missing, f"screenshots missing or not PNG: {missing}"


def screenshot(page: Page, name: str) -> Path:
    Artifacts.folder.mkdir(parents=True, exist_ok=True)
    path = Artifacts.folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    Artifacts.taken.append(path)
    return path
