"""Asking the WeChat server (new-api's companion, wechat-server: it runs the official
account and hands out login codes) whose code a user typed: ``GET
{WeChatServerAddress}/api/wechat/user?code=`` with ``Authorization: <WeChatServerToken>``
answers ``{success, message, data: <openid>}``. Through the core's guarded fetcher: never
a metadata or link-local address; a private one unless ``wechat_private_addresses=deny``
(the WeChat server usually runs beside the gateway)."""

from __future__ import annotations

from urllib.parse import quote

from faregate.api import AddressCategory, FetchError, GuardedFetcher, Services, json_loads

_PRIVATE = frozenset({AddressCategory.LOOPBACK, AddressCategory.PRIVATE})


class WeChatRefused(Exception):
    """No openid for the code; the message is safe to show."""


async def openid_for(services: Services, code: str) -> str:
    options = services.options
    if not options.value("WeChatAuthEnabled"):
        raise WeChatRefused("WeChat login is not enabled by the administrator")
    base = str(options.value("WeChatServerAddress")).rstrip("/")
    if not base:
        raise WeChatRefused("WeChat login is not set up (no WeChatServerAddress)")
    allow = _PRIVATE if services.settings.get("wechat_private_addresses", "allow") == "allow" else ()
    try:
        async with GuardedFetcher(allow=allow, max_bytes=64 * 1024, timeout=10.0, connect_timeout=5.0) as fetcher:
            got = await fetcher.fetch(f"{base}/api/wechat/user?code={quote(code)}",
                                      headers={"Authorization": str(options.value("WeChatServerToken")),
                                               "Accept": "application/json"})
    except FetchError as exc:
        raise WeChatRefused(f"the WeChat server could not be reached: {exc.message}") from None
    try:
        body = json_loads(got.content)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise WeChatRefused(f"the WeChat server answered HTTP {got.status} without JSON")
    openid = body.get("data")
    if body.get("success") is not True or not isinstance(openid, str) or not openid or len(openid) > 255:
        raise WeChatRefused(str(body.get("message") or "the code is wrong or has expired")[:200])
    return openid
