"""Envelope, paging and access checks shared by the management blueprints."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from quart import Response, current_app, request, session

from faregate import jsonutil
from faregate.db import models as m
from faregate.hooks import await_me_maybe
from faregate.relay.context import AuthRequest, Principal


def gateway() -> Any:
    return current_app.faregate  # type: ignore[attr-defined]


def ok(data: Any = None, message: str = "") -> Response:
    body: dict[str, Any] = {"success": True, "message": message}
    if data is not None:
        body["data"] = data
    return Response(jsonutil.dumps(body), content_type="application/json")


def fail(message: str, status: int = 200, **extra: Any) -> Response:
    """new-api answers most failures with HTTP 200 and ``success: false``."""
    return Response(jsonutil.dumps({"success": False, "message": message, **extra}), status=status,
                    content_type="application/json")


async def json_body() -> dict[str, Any] | None:
    raw = await request.get_data()
    if not raw:
        return {}
    try:
        value = jsonutil.loads(raw)
    except jsonutil.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def paging() -> tuple[int, int]:
    args = request.args

    def num(*names: str, default: int) -> int:
        for name in names:
            try:
                return int(args[name])
            except (KeyError, ValueError):
                continue
        return default

    page = max(1, num("p", default=1))
    size = num("page_size", "ps", "size", default=10)
    size = 10 if size <= 0 else min(size, 100)
    return page, size


def page_data(items: list[Any], total: int, page: int, size: int, **extra: Any) -> dict[str, Any]:
    return {"page": page, "page_size": size, "total": total, "items": items, **extra}


async def current_principal() -> tuple[Principal | None, Response | None]:
    """Resolve the caller; returns (principal, None) or (None, error response)."""
    gw = gateway()
    header = request.headers.get("New-Api-User", "")
    auth_req = AuthRequest(headers=request.headers, args=request.args, remote_addr=request.remote_addr or "",
                           session=session)
    principal = None
    for authenticator in gw.management_authenticators:
        principal = await await_me_maybe(authenticator.authenticate(auth_req))
        if principal is not None:
            break
    if principal is None:
        return None, fail("not logged in and no access token provided", status=401)
    if not header:
        return None, fail("missing New-Api-User header", status=401)
    try:
        header_id = int(header)
    except ValueError:
        return None, fail("malformed New-Api-User header", status=401)
    if header_id != principal.user.id:
        return None, fail("New-Api-User does not match the logged-in user", status=401)
    if principal.user.status != m.USER_ENABLED:
        return None, fail("user is disabled")
    return principal, None


def require(role: int) -> Callable[[Callable[..., Awaitable[Response]]], Callable[..., Awaitable[Response]]]:
    """Access level: ROLE_USER, ROLE_ADMIN or ROLE_ROOT. The principal is passed as
    the ``me`` keyword."""

    def decorator(view: Callable[..., Awaitable[Response]]) -> Callable[..., Awaitable[Response]]:
        @functools.wraps(view)
        async def wrapper(*args: Any, **kwargs: Any) -> Response:
            principal, error = await current_principal()
            if error is not None:
                return error
            assert principal is not None
            if principal.user.role < role:
                return fail("permission denied")
            return await view(*args, me=principal, **kwargs)

        return wrapper

    return decorator
