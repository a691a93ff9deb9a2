"""Email sign-up codes, password reset and binding, end to end: a real gateway, the core's
registration, and a local SMTP server (aiosmtpd) receiving what the plugin sends."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import httpx

from faregate.testing.harness import ROOT_PASSWORD, AdminClient, GatewayServer
from faregate_auth_email.testing import LocalSMTP

PASSWORD = "a-long-password-1"


async def _signup(http: httpx.AsyncClient, smtp: LocalSMTP, email: str, username: str) -> dict[str, object]:
    sent = (await http.get("/api/verification", params={"email": email})).json()
    assert sent["success"] is True, sent
    code = await smtp.code_for(email)
    body = {"username": username, "password": PASSWORD, "password2": PASSWORD, "email": email,
            "verification_code": code}
    result: dict[str, object] = (await http.post("/api/user/register", json=body)).json()
    return result


async def test_sign_up_with_an_emailed_code(gateway: GatewayServer, admin: AdminClient, smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.set_option("EmailVerificationEnabled", True)
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        # without the code: refused, naming what is missing
        refused = (await http.post("/api/user/register", json={"username": "ann", "password": PASSWORD})).json()
        assert refused["success"] is False and "verification" in refused["message"]
        assert (await _signup(http, smtp, "Ann@Example.com", "ann"))["success"] is True
        mail = smtp.messages[-1]
        assert mail["From"] and "gate@example.com" in str(mail["From"]) and "Faregate" in str(mail["Subject"])
        logged = (await http.post("/api/user/login", json={"username": "ann", "password": PASSWORD})).json()
        assert logged["success"] is True
        assert (await admin.ok("GET", f"/api/user/{logged['data']['id']}"))["email"] == "ann@example.com"
        # the address is now taken: the same answer, but its owner gets a note, not a code
        taken = (await http.get("/api/verification", params={"email": "ann@example.com"})).json()
        assert taken == {"success": True, "message": "check your mailbox: the code is on its way"}
        note = smtp.html(await smtp.wait_for("ann@example.com", count=2))
        assert "already has an account" in note and "<strong>" not in note


async def test_domain_allow_list_and_alias_rule(gateway: GatewayServer, admin: AdminClient, smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.set_option("EmailDomainRestrictionEnabled", True)
    await admin.set_option("EmailDomainWhitelist", "example.com, corp.example")
    await admin.set_option("EmailAliasRestrictionEnabled", True)
    assert (await admin.call("PUT", "/api/option/", json={"key": "EmailDomainWhitelist", "value": "not a domain"}))[
        "success"] is False
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        for email, word in (("eve@evil.example", "domain"), ("ann+spam@example.com", "alias")):
            answer = (await http.get("/api/verification", params={"email": email})).json()
            assert answer["success"] is False and word in answer["message"], answer
        assert (await http.get("/api/verification", params={"email": "bob@corp.example"})).json()["success"] is True
        assert (await http.get("/api/verification", params={"email": "x" * 200 + "@a.b"})).status_code == 400
    assert [str(mail["To"]) for mail in smtp.messages] == ["bob@corp.example"]


async def test_password_reset_by_email(gateway: GatewayServer, admin: AdminClient, smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.set_option("ServerAddress", "https://gate.example")
    await admin.ok("PUT", "/api/user/", json={"id": admin.user_id, "email": "root@example.com"})
    async with httpx.AsyncClient(base_url=gateway.base_url) as http:
        assert (await http.get("/api/reset_password", params={"email": "root@example.com"})).json()["success"]
        link = re.search(r'href="([^"]+)"', smtp.html(await smtp.wait_for("root@example.com")))
        assert link is not None
        url = urlsplit(link[1].replace("&amp;", "&"))
        assert (url.scheme, url.netloc, url.path) == ("https", "gate.example", "/user/reset")
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        reset = await http.post("/api/user/reset", json=query)
        assert reset.json()["success"] is True and reset.headers["Cache-Control"] == "no-store"
        new_password = reset.json()["data"]
        # the old session ended; the new password logs in, the old one no longer does
        assert (await admin.call("GET", "/api/user/self"))["success"] is False
        assert (await http.post("/api/user/login", json={"username": "root", "password": ROOT_PASSWORD})).json()[
            "success"] is False
        assert (await http.post("/api/user/login", json={"username": "root", "password": new_password})).json()[
            "success"] is True
        # the link works once
        again = (await http.post("/api/user/reset", json=query)).json()
        assert again["success"] is False and "expired" in again["message"]


async def test_binding_an_address(gateway: GatewayServer, admin: AdminClient, smtp: LocalSMTP) -> None:
    await smtp.configure(admin)
    await admin.ok("GET", "/api/verification", params={"email": "me@example.com"})
    code = await smtp.code_for("me@example.com")
    wrong = await admin.call("POST", "/api/oauth/email/bind", json={"email": "me@example.com", "code": "000000"
                                                                     if code != "000000" else "111111"})
    assert wrong["success"] is False
    await admin.ok("POST", "/api/oauth/email/bind", json={"email": "me@example.com", "code": code})
    assert (await admin.ok("GET", "/api/user/self"))["email"] == "me@example.com"
    # bodies are declared: a missing or extra field is a 400 naming it
    bad = await admin.http.post("/api/oauth/email/bind", json={"email": "me@example.com", "colour": "red"},
                                headers={"New-Api-User": str(admin.user_id)})
    assert bad.status_code == 400 and "code" in bad.json()["message"] and "colour" in bad.json()["message"]


async def test_without_smtp_the_answer_says_so(gateway: GatewayServer, admin: AdminClient) -> None:
    answer = await admin.call("GET", "/api/verification", params={"email": "me@example.com"})
    assert answer["success"] is False and "SMTP" in answer["message"]
    # a reset request answers as usual (it must not tell whether the address has an account)
    assert (await admin.call("GET", "/api/reset_password", params={"email": "me@example.com"}))["success"] is True


async def test_a_failing_smtp_server_leaks_no_secret(gateway: GatewayServer, admin: AdminClient,
                                                    caplog: object) -> None:
    await admin.set_option("SMTPServer", "127.0.0.1")
    await admin.set_option("SMTPPort", "9")  # nothing listens
    await admin.set_option("SMTPAccount", "gate")
    await admin.set_option("SMTPToken", "smtp-secret-token-123")
    answer = await admin.call("GET", "/api/verification", params={"email": "me@example.com"})
    assert answer["success"] is False and "could not be sent" in answer["message"]
    assert "smtp-secret-token-123" not in str(answer)
    assert "smtp-secret-token-123" not in (await admin.http.get("/api/option/", headers={
        "New-Api-User": str(admin.user_id)})).text
    assert "smtp-secret-token-123" not in caplog.text  # type: ignore[attr-defined]
