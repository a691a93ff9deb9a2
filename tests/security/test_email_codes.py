"""Email codes and reset links (issue 16): a six-digit code cannot be walked through (it dies
after five wrong guesses and every guess is throttled per address), works once and only for
the address it was sent to, and is stored as a keyed hash; a reset link works once and only
with its address; neither asking for a code nor for a reset link tells whether the address has
an account (not by the answer, not by the throttle, not by the time the answer takes); sends
are limited per client IP apart from failed logins."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import pytest_asyncio

from faregate.db import models as m
from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_auth_email.testing import LocalSMTP

PASSWORD = "a-long-password-1"


@pytest.fixture
def smtp() -> Iterator[LocalSMTP]:
    server = LocalSMTP()
    server.start()
    yield server
    server.stop()


def _register(email: str, code: str, username: str = "newbie") -> dict[str, str]:
    return {"username": username, "password": PASSWORD, "email": email, "verification_code": code}


def _wrong(code: str, n: int) -> str:
    guess = f"{(int(code) + n) % 10**6:06d}"
    assert guess != code
    return guess


async def test_a_code_dies_after_five_wrong_guesses(gateway: GatewayServer, admin: AdminClient,
                                                    smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.set_option("EmailVerificationEnabled", True)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        await http.get("/api/verification", params={"email": "a@example.com"})
        code = await smtp.code_for("a@example.com")
        row = await m.AuthFlow.get(subject="a@example.com")
        assert code not in row.secret_hash and code not in row.payload  # only a keyed hash is kept
        for n in range(1, 6):
            answer = (await http.post("/api/user/register", json=_register("a@example.com", _wrong(code, n)))).json()
            assert answer["success"] is False
        late = (await http.post("/api/user/register", json=_register("a@example.com", code))).json()
        assert late["success"] is False and "wrong or has expired" in late["message"]
        assert not await m.User.filter(username="newbie").exists()


async def test_guessing_codes_is_throttled_per_address(make_gateway: object, smtp: LocalSMTP) -> None:
    gw: GatewayServer = await make_gateway(settings={"login_max_failures_per_account": 3,  # type: ignore[operator]
                                                     "login_max_failures_per_ip": 1000})
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    await smtp.configure(admin)
    await admin.set_option("EmailVerificationEnabled", True)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        await http.get("/api/verification", params={"email": "b@example.com"})
        code = await smtp.code_for("b@example.com")
        guesses = [_register("b@example.com", _wrong(code, n)) for n in range(1, 5)]
        statuses = [(await http.post("/api/user/register", json=body)).status_code for body in guesses]
        assert statuses[-1] == 429
    await admin.close()


async def test_a_code_is_for_one_address_and_one_use(gateway: GatewayServer, admin: AdminClient,
                                                     smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.set_option("EmailVerificationEnabled", True)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        await http.get("/api/verification", params={"email": "c@example.com"})
        code = await smtp.code_for("c@example.com")
        other = (await http.post("/api/user/register", json=_register("d@example.com", code))).json()
        assert other["success"] is False  # sent to c@, useless for d@
        assert (await http.post("/api/user/register", json=_register("c@example.com", code))).json()["success"]
        # used: neither a second sign-up nor a binding takes it again
        again = (await http.post("/api/user/register", json=_register("c@example.com", code, "second"))).json()
        assert again["success"] is False
    bind = await admin.call("POST", "/api/oauth/email/bind", json={"email": "c@example.com", "code": code})
    assert bind["success"] is False


async def test_reset_links_are_single_use_and_tell_nothing(gateway: GatewayServer, admin: AdminClient,
                                                           smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.ok("PUT", "/api/user/", json={"id": admin.user_id, "email": "root@example.com"})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        known = await http.get("/api/reset_password", params={"email": "root@example.com"})
        unknown = await http.get("/api/reset_password", params={"email": "nobody@example.com"})
        assert known.json() == unknown.json() and known.status_code == unknown.status_code
        html = smtp.html(await smtp.wait_for("root@example.com"))
        assert not any("nobody" in str(mail["To"]) for mail in smtp.messages)
        token = html.split("token=", 1)[1].split('"', 1)[0]
        # the token is bound to its address
        assert (await http.post("/api/user/reset", json={"email": "nobody@example.com", "token": token})).json()[
            "success"] is False
        assert (await http.post("/api/user/reset", json={"email": "root@example.com", "token": token})).json()[
            "success"] is True
        assert (await http.post("/api/user/reset", json={"email": "root@example.com", "token": token})).json()[
            "success"] is False


async def test_code_requests_are_limited_before_anything_is_told(gateway: GatewayServer, admin: AdminClient,
                                                                smtp: LocalSMTP) -> None:
    """new-api's EmailVerificationRateLimit (2 per 30 s per client IP) comes first: a third
    request is refused whatever its address, so addresses cannot be tried at full speed; and a
    taken address answers as a free one does (its owner gets a note instead of a code)."""
    await smtp.configure(admin)
    await admin.ok("PUT", "/api/user/", json={"id": admin.user_id, "email": "root@example.com"})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        taken = await http.get("/api/verification", params={"email": "root@example.com"})
        free = await http.get("/api/verification", params={"email": "free@example.com"})
        assert taken.json() == free.json() and taken.json()["success"] is True
        for email in ("root@example.com", "other@example.com", "not an address"):
            third = await http.get("/api/verification", params={"email": email})
            assert third.status_code == 429 and int(third.headers["Retry-After"]) >= 1, email
    note = smtp.html(await smtp.wait_for("root@example.com"))
    assert "already has an account" in note and "<strong>" not in note  # no code for a taken address
    await smtp.code_for("free@example.com")


async def test_sending_mail_never_blocks_logging_in(make_gateway: object, smtp: LocalSMTP) -> None:
    """Sends have their own counter: a client that asked for many codes still logs in (they
    used to count as failed logins of its IP, never given back)."""
    gw: GatewayServer = await make_gateway(settings={"login_max_failures_per_ip": 2,  # type: ignore[operator]
                                                     "email_sends_per_ip": 50})
    admin = AdminClient(gw.base_url)
    await admin.setup_root()
    await smtp.configure(admin)
    async with httpx.AsyncClient(base_url=gw.base_url) as http:
        for n in range(5):
            assert (await http.get("/api/verification", params={"email": f"u{n}@example.com"})).json()["success"]
            assert (await http.get("/api/reset_password", params={"email": f"u{n}@example.com"})).json()["success"]
        login = await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})
        assert login.status_code == 200 and login.json()["success"] is True
    await admin.close()


@pytest_asyncio.fixture
async def stalling_smtp() -> AsyncIterator[int]:
    """A port whose server accepts and never says a word (a slow or hung SMTP server)."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    yield server.sockets[0].getsockname()[1]
    for writer in held:  # the gateway's waiting send fails at once, before the gateway stops
        writer.close()
    server.close()
    await server.wait_closed()


async def test_a_reset_request_does_not_wait_for_the_mail(gateway: GatewayServer, admin: AdminClient,
                                                          stalling_smtp: int) -> None:
    """The reset link is looked up and sent after the answer: an address with an account
    answers as fast as one without (a send inline would take the SMTP server's time, and
    only for a real account)."""
    await admin.set_option("SMTPServer", "127.0.0.1")
    await admin.set_option("SMTPPort", str(stalling_smtp))
    await admin.ok("PUT", "/api/user/", json={"id": admin.user_id, "email": "root@example.com"})
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=5) as http:
        answers = []
        for email in ("root@example.com", "nobody@example.com"):
            started = time.monotonic()
            answers.append((await http.get("/api/reset_password", params={"email": email})).json())
            assert time.monotonic() - started < 1.0, email
        assert answers[0] == answers[1] and answers[0]["success"] is True
