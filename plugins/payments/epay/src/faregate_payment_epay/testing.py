"""A fake Epay gateway for tests: ``/submit.php`` takes the signed payment form as a browser posts
it (checking the signature and the merchant id, as the real one does) and records the order; a
test then "pays" it with :meth:`FakeEpay.notify`, which calls the form's ``notify_url`` back with
the MD5-signed parameters, by GET (the usual) or POST::

    async with FakeEpay() as epay:
        # options PayAddress = epay.base_url, EpayId = epay.pid, EpayKey = epay.key
        answer = await user.post("/api/user/pay", json={"amount": 10, "payment_method": "alipay"})
        await epay.submit(answer["url"], answer["data"])      # what the browser does
        reply = await epay.notify(epay.orders[-1])            # "success"
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import parse_qsl

import httpx

from faregate.testing.fake_server import FakeServer, Request, Response
from faregate_payment_epay.provider import sign

TEXT = b"text/plain; charset=utf-8"


class FakeEpay(FakeServer):
    """An Epay aggregator. ``orders`` are the forms it accepted (the parameters as posted)."""

    def __init__(self, pid: str = "1001", key: str = "epay-test-key-0123456789", **kwargs: Any) -> None:
        super().__init__(key=key, **kwargs)
        self.pid = pid
        self.orders: list[dict[str, str]] = []

    def error_body(self, status: int, message: str | None = None) -> bytes:
        return (message or "error").encode()

    async def answer(self, request: Request, response: Response) -> None:
        if request.path != "/submit.php":
            return response.send(404, b"not found", TEXT)
        if request.method == "POST":
            params = dict(parse_qsl(request.body.decode(), keep_blank_values=True))
        else:
            params = dict(request.query)
        if params.get("pid") != self.pid:
            return response.send(400, "商户不存在".encode(), TEXT)
        assert self.key is not None
        if params.get("sign") != sign(params, self.key) or params.get("sign_type") != "MD5":
            return response.send(400, "签名校验失败".encode(), TEXT)
        self.orders.append(params)
        await response.reply(200, b"<html><body>pay here</body></html>", b"text/html; charset=utf-8")

    async def submit(self, url: str, form: dict[str, str]) -> httpx.Response:
        """Post ``form`` to ``url`` as the user's browser would (the pay answer's ``url``)."""
        async with httpx.AsyncClient(timeout=30) as http:
            return await http.post(url, data=form)

    def notification(self, order: dict[str, str], *, key: str | None = None, **changes: str) -> dict[str, str]:
        """The signed callback parameters paying ``order`` (``changes`` applied before signing)."""
        params = {"pid": self.pid, "trade_no": f"2024{secrets.randbelow(10**12):012d}",
                  "out_trade_no": order["out_trade_no"], "type": order["type"], "name": order["name"],
                  "money": order["money"], "trade_status": "TRADE_SUCCESS"} | changes
        params["sign"] = sign(params, key if key is not None else (self.key or ""))
        params["sign_type"] = "MD5"
        return params

    async def notify(self, order: dict[str, str], *, method: str = "GET", params: dict[str, str] | None = None,
                     url: str | None = None, client: httpx.AsyncClient | None = None) -> httpx.Response:
        """Call ``order``'s ``notify_url`` (or ``url``) with ``params`` (default: a fresh signed
        payment of the order), by GET query or POST form."""
        sent = params if params is not None else self.notification(order)
        target = url or order["notify_url"]
        own = client is None
        http = client or httpx.AsyncClient(timeout=30)
        try:
            if method == "GET":
                return await http.get(target, params=sent)
            return await http.post(target, data=sent)
        finally:
            if own:
                await http.aclose()
