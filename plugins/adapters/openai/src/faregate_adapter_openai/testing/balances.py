"""The balance APIs of OpenAI-compatible vendors, as the fake OpenAI server answers them
(the shapes each vendor documents, which new-api reads in controller/channel-billing.go):

``GET /user/balance``          DeepSeek: ``{is_available, balance_infos: [{currency,
                               total_balance, granted_balance, topped_up_balance}]}``,
                               amounts as decimal strings, one entry per currency
``GET /v1/credits``            OpenRouter (``https://openrouter.ai/api/v1/credits``):
                               ``{data: {total_credits, total_usage}}`` in US dollars
``GET /v1/user/info``          SiliconFlow: ``{code: 20000, message, status, data: {…,
                               balance, chargeBalance, totalBalance}}``, yuan as strings
``GET /v1/users/me/balance``   Moonshot: ``{code: 0, data: {available_balance,
                               voucher_balance, cash_balance}, scode, status}``

What they report is :class:`VendorBalances` (``FakeOpenAI.balances``), which a test changes;
``refusing`` makes SiliconFlow and Moonshot answer their "not OK" envelope (HTTP 200 with
an error code, as they do)."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from faregate.testing.fake_server import Request, Response

__all__ = ["PATHS", "VendorBalances", "answer"]

DEEPSEEK, OPENROUTER, SILICONFLOW, MOONSHOT = "/user/balance", "/v1/credits", "/v1/user/info", "/v1/users/me/balance"
PATHS = frozenset({DEEPSEEK, OPENROUTER, SILICONFLOW, MOONSHOT})


@dataclass(slots=True)
class VendorBalances:
    """What each vendor's balance API reports."""

    #: DeepSeek's ``balance_infos``: currency → total balance
    deepseek: dict[str, float] = field(default_factory=lambda: {"CNY": 110.0})
    openrouter_credits: float = 100.5
    openrouter_usage: float = 25.75
    #: SiliconFlow's ``totalBalance`` (yuan)
    siliconflow: float = 88.88
    #: Moonshot's ``available_balance`` (yuan on api.moonshot.cn)
    moonshot: float = 49.58
    #: SiliconFlow and Moonshot answer their error envelope
    refusing: bool = False


def _money(value: float) -> str:
    return f"{value:.2f}"


def answer(balances: VendorBalances, request: Request, response: Response) -> bool:
    """Answer ``GET`` at one of :data:`PATHS` (True); False for any other request."""
    if request.method != "GET" or request.path not in PATHS:
        return False
    path = request.path
    body: object
    if path == DEEPSEEK:
        infos = [{"currency": currency, "total_balance": _money(total), "granted_balance": "0.00",
                  "topped_up_balance": _money(total)} for currency, total in balances.deepseek.items()]
        body = {"is_available": any(total > 0 for total in balances.deepseek.values()), "balance_infos": infos}
    elif path == OPENROUTER:
        body = {"data": {"total_credits": balances.openrouter_credits, "total_usage": balances.openrouter_usage}}
    elif path == SILICONFLOW:
        if balances.refusing:
            body = {"code": 30001, "message": "Sorry, your account balance is insufficient", "status": False,
                    "data": None}
        else:
            total = balances.siliconflow
            body = {"code": 20000, "message": "OK", "status": True, "data": {
                "id": "userid", "name": "fake", "image": "", "email": "", "isAdmin": False,
                "balance": _money(total / 2), "status": "normal", "introduction": "", "role": "",
                "chargeBalance": _money(total / 2), "totalBalance": _money(total)}}
    elif balances.refusing:
        body = {"code": 5, "error": {"message": "auth failed", "type": "invalid_authentication_error"},
                "scode": "0x5", "status": False}
    else:
        body = {"code": 0, "data": {"available_balance": balances.moonshot, "voucher_balance": 0.0,
                                    "cash_balance": balances.moonshot}, "scode": "0x0", "status": True}
    response.send(200, orjson.dumps(body))
    return True
