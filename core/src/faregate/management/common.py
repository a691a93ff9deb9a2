"""Envelope, paging, input checks and access checks shared by the management blueprints."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from quart import Response, current_app, request, session
from tortoise.exceptions import IntegrityError, ValidationError
from tortoise.expressions import Q
from tortoise.models import Model
from tortoise.queryset import QuerySet

from faregate import jsonutil
from faregate.accounts import errors as account_errors
from faregate.accounts.errors import Refused
from faregate.awaitables import await_me_maybe
from faregate.contracts import AuthRequest
from faregate.db import models as m
from faregate.principals import Principal

if TYPE_CHECKING:
    from faregate.management.host import GatewayApp, ManagementHost

log = logging.getLogger("faregate.management")

INT32_MAX = 2**31 - 1
#: the latest unix time a filter or expiry may name (far past any date; inside BIGINT)
TIME_MAX = 2**62
MAX_PAGE = 10_000_000  # keeps (page - 1) * page_size far inside every database's OFFSET range
DEFAULT_PAGE_SIZE = 10
MAX_PAGE_SIZE = 100

_INT_RE = re.compile(r"-?[0-9]{1,19}")

View = Callable[..., Awaitable[Response]]
ModelT = TypeVar("ModelT", bound=Model)


class BadInput(Exception):
    """A malformed request: answered as ``success: false`` with this message."""

    def __init__(self, message: str, status: int = 200) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def gateway() -> ManagementHost:
    """The running worker's gateway (``current_app`` is the :class:`~faregate.app.FaregateApp`)."""
    return cast("GatewayApp", current_app).faregate


def ok(data: Any = None, message: str = "") -> Response:
    body: dict[str, Any] = {"success": True, "message": message}
    if data is not None:
        body["data"] = data
    return Response(jsonutil.dumps(body), content_type="application/json")


def fail(message: str, status: int = 200, **extra: Any) -> Response:
    """new-api answers most failures with HTTP 200 and ``success: false``."""
    return Response(jsonutil.dumps({"success": False, "message": message, **extra}), status=status,
                    content_type="application/json")


def refusal(refused: Refused) -> Response:
    """A refusal of the account rules in new-api's envelope, with ``Retry-After`` when it has one."""
    response = fail(refused.message, status=refused.status)
    if refused.retry_after is not None:
        response.headers["Retry-After"] = str(refused.retry_after)
    return response


def too_many(what: str, wait: float) -> Response:
    """The 429 of a throttle or rate limit: "too many ``what``", with ``Retry-After``
    the ``wait`` in whole seconds."""
    return refusal(account_errors.too_many(what, wait))


def parse_id(value: Any, name: str = "id", *, text: bool = True) -> int:
    """A row id: a positive 32-bit integer; from a path or query string when ``text``,
    else a JSON number (a body's ``"id": "5"`` fails, as in Go)."""
    if text and isinstance(value, str):
        digits = value.strip()
        value = int(digits) if digits.isascii() and digits.isdigit() else None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= INT32_MAX:
        raise BadInput(f"invalid {name}")
    return value


#: a query string: a werkzeug MultiDict, or a plain dict (bench/log_scale.py calls the log filters)
Args = Mapping[str, str]


def query_text(name: str, max_len: int, *, args: Args | None = None, strip: bool = True) -> str:
    """A text argument of the query string, ``""`` when absent: at most ``max_len``
    characters and no NUL (PostgreSQL cannot compare one), else a 400."""
    value = (request.args if args is None else args).get(name, "")
    if strip:
        value = value.strip()
    if len(value) > max_len or "\x00" in value:
        raise BadInput(f"{name} must be at most {max_len} characters", status=400)
    return value


def query_int(name: str, lo: int, hi: int, *, args: Args | None = None) -> int | None:
    """An integer argument of the query string, None when absent or empty; a 400 when it
    is not an integer from ``lo`` to ``hi``."""
    text = (request.args if args is None else args).get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        raise BadInput(f"{name} must be an integer", status=400) from None
    if not lo <= value <= hi:
        raise BadInput(f"{name} must be from {lo} to {hi}", status=400)
    return value


def paging() -> tuple[int, int]:
    """new-api's ``GetPageQuery``: ``p`` (1-based), ``page_size`` with fallbacks ``ps``
    then ``size`` when absent or 0; default 10, at most 100."""
    args = request.args

    def num(name: str) -> int:
        try:
            return int(args.get(name, ""))
        except ValueError:
            return 0

    page = min(max(1, num("p")), MAX_PAGE)
    size = num("page_size") or num("ps") or num("size")
    size = DEFAULT_PAGE_SIZE if size <= 0 else min(size, MAX_PAGE_SIZE)
    return page, size


async def page_rows(query: QuerySet[ModelT], *order: str) -> tuple[list[ModelT], int, int, int]:
    """The page of ``query`` that ``p`` / ``page_size`` ask for, ordered by ``order``
    (newest first by default): ``(rows, total, page, size)``."""
    page, size = paging()
    total = await query.count()
    rows = await query.order_by(*(order or ("-id",))).offset((page - 1) * size).limit(size)
    return list(rows), total, page, size


def keyword_match(keyword: str, *fields: str) -> Q:
    """Any of ``fields`` contains ``keyword`` (LIKE wildcards in it match themselves:
    tortoise escapes them), or, for a number, the row id is ``keyword``."""
    match = Q(**{f"{fields[0]}__icontains": keyword})
    for name in fields[1:]:
        match |= Q(**{f"{name}__icontains": keyword})
    if keyword.isdigit() and len(keyword) < 10:
        match |= Q(id=int(keyword))
    return match


def page_data(items: list[Any], total: int, page: int, size: int, **extra: Any) -> dict[str, Any]:
    return {"page": page, "page_size": size, "total": total, "items": items, **extra}


# -- access -----------------------------------------------------------------------------
async def current_principal() -> tuple[Principal | None, Response | None]:
    """Resolve the caller as new-api's ``authHelper``; returns (principal, None) or
    (None, error response)."""
    gw = gateway()
    # another worker may have just created or changed this user: catch up first
    await gw.feed.catch_up()
    # werkzeug's Headers has a Mapping's lookups (what authenticators use) without being one
    auth_req = AuthRequest(headers=cast("Mapping[str, str]", request.headers), args=request.args,
                           remote_addr=request.remote_addr or "", session=session)
    principal = None
    for authenticator in gw.management_authenticators:
        principal = await await_me_maybe(authenticator.authenticate(auth_req))
        if principal is not None:
            break
    if principal is None:
        if request.headers.get("Authorization", "").strip():
            return None, fail("invalid access token")  # new-api: 200, not 401
        return None, fail("not logged in and no access token provided", status=401)
    header = request.headers.get("New-Api-User", "").strip()
    if not header:
        return None, fail("missing New-Api-User header", status=401)
    if not _INT_RE.fullmatch(header):
        return None, fail("malformed New-Api-User header", status=401)
    if int(header) != principal.user.id:
        return None, fail("New-Api-User does not match the logged-in user", status=401)
    if principal.user.status != m.USER_ENABLED:
        return None, fail("user is disabled")
    return principal, None


def guarded(view: View) -> View:
    """Turn malformed input into ``success: false`` instead of a 500."""

    @functools.wraps(view)
    async def wrapper(*args: Any, **kwargs: Any) -> Response:
        try:
            return await view(*args, **kwargs)
        except BadInput as exc:
            return fail(exc.message, status=exc.status)
        except Refused as refused:
            return refusal(refused)
        except IntegrityError:
            log.warning("%s %s: integrity error", request.method, request.path)
            return fail("the change conflicts with an existing record")
        except ValidationError as exc:  # a value past a column's bounds that no check caught first
            log.warning("%s %s: %s", request.method, request.path, type(exc).__name__)
            return fail("a value is too long or out of range for its field", status=400)

    return wrapper


#: the attribute on a management view saying who may call it: a role number, "public"
#: or "api_key" (tests/security/test_access_matrix.py fails on a route without one)
ACCESS = "faregate_access"


def public(view: View) -> View:
    """Declare a route open to anyone (setup, login, the site's pages)."""
    setattr(view, ACCESS, "public")
    return view


#: who is calling: (principal, None), or (None, the error response to answer with)
_Resolver = Callable[[], Awaitable[tuple[Principal | None, Response | None]]]


def _access(role: int, resolve: _Resolver) -> Callable[[View], View]:
    """A view guarded by ``resolve`` and ``role``, the principal passed as ``me``."""

    def decorator(view: View) -> View:
        @functools.wraps(view)
        async def wrapper(*args: Any, **kwargs: Any) -> Response:
            principal, error = await resolve()
            if error is not None:
                return error
            assert principal is not None
            if principal.user.role < role:
                return fail("permission denied: insufficient role")
            return await view(*args, me=principal, **kwargs)

        guarded_view = guarded(wrapper)
        setattr(guarded_view, ACCESS, role)
        return guarded_view

    return decorator


def require(role: int) -> Callable[[View], View]:
    """Access level: ROLE_USER, ROLE_ADMIN or ROLE_ROOT. The principal is passed as
    the ``me`` keyword."""
    return _access(role, current_principal)


async def _session_principal() -> tuple[Principal | None, Response | None]:
    """The login session's live, enabled user, as :func:`current_principal` answers."""
    gw = gateway()
    await gw.feed.catch_up()
    user = gw.services.accounts.session_user()
    if user is None:
        return None, fail("not logged in: this route needs the login session", status=401)
    return Principal(user=user, group=user.group, via="session"), None


def require_session(role: int) -> Callable[[View], View]:
    """Like :func:`require`, for a route a browser reaches by plain navigation (a sign-in
    widget's redirect), which cannot send ``New-Api-User``: the login session alone, never an
    access token. Without the header nothing stops a cross-site link from reaching it, so the
    route must check a proof of its own (a state given to this session)."""
    return _access(role, _session_principal)
