"""A local WeChat server (aiohttp, loopback): ``codes`` maps a login code to an openid;
the server wants its token, as wechat-server does."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from faregate.testing.harness import free_port

TOKEN = "wechat-server-token"


@dataclass
class FakeWeChatServer:
    codes: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeWeChatServer:
        app = web.Application()
        app.router.add_get("/api/wechat/user", self._user)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _user(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != TOKEN:
            return web.json_response({"success": False, "message": "unauthorized"})
        openid = self.codes.pop(request.query.get("code", ""), "")  # a code works once
        if not openid:
            return web.json_response({"success": False, "message": "the code is wrong or has expired"})
        return web.json_response({"success": True, "message": "", "data": openid})
