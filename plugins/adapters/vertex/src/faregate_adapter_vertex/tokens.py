"""A service account's OAuth access tokens: the JWT-bearer grant (an assertion signed with
the account's private key by google-auth's signer, posted to the account's ``token_uri``). The
signing runs in a worker thread; the post goes through the gateway's upstream client
(``services.upstream``) as the relay's calls do: through the channel's proxy (``setting.proxy``),
to an address the channel address policy allows (checked when the connection is made: a
token_uri whose name resolves to a metadata server is refused), bounded in time and size,
never redirected: the assertion goes to the token_uri the key names and nowhere else. A token
is cached per key until shortly before it expires, and shared by every request of the worker:
concurrent requests that find it stale wait for one refresh (single flight), never start one each.
Each worker process holds its own token (a token is a secret: it is kept in memory only, never
written where another process could read it).
Nothing of a key or a token is ever logged; a failed exchange says only the OAuth error code.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from faregate.api import (
    GatewayError,
    UpstreamAddressRefused,
    UpstreamClient,
    UpstreamRequest,
    UpstreamTransportError,
    json_loads,
)
from faregate_adapter_vertex.keys import ServiceAccount
from faregate_adapter_vertex.names import SCOPE

log = logging.getLogger("faregate.adapter.vertex")

#: refresh a token this long before it expires (at most half its lifetime)
REFRESH_MARGIN = 300.0
#: a token answer without ``expires_in`` is taken to last this long (Google's tokens last an hour)
DEFAULT_LIFETIME = 3600.0
#: seconds the token endpoint may take
TOKEN_TIMEOUT = 15.0
#: after a failed refresh, while the old token lasts, the next try waits this long
RETRY_AFTER = 30.0
#: keys whose tokens a worker keeps (a few per channel at most)
MAX_KEYS = 1024
#: the JWT-bearer grant (RFC 7523), and the audience Google's token endpoint takes (google-auth's)
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
#: an assertion is valid this long (Google's maximum)
ASSERTION_LIFETIME = 3600
#: a token answer is small; more than this is not one
MAX_ANSWER = 64 * 1024
#: a token endpoint's 5xx or a failed connection is tried again this many times (as google-auth)
GRANT_RETRIES = 2
_OAUTH_ERROR = re.compile(r"[a-z_]{1,40}")


class _Refused(Exception):
    """The token endpoint refused the grant (its OAuth error code, when it gave one)."""

    def __init__(self, code: str | None) -> None:
        super().__init__(code or "")
        self.code = code


class _Unreachable(Exception):
    """No answer from the token endpoint (a connection error, a timeout, a 5xx); ``refused``:
    its address is one the gateway does not connect to."""

    def __init__(self, refused: bool = False) -> None:
        super().__init__()
        self.refused = refused


@dataclass(slots=True)
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    token: str = ""
    refresh_at: float = 0.0
    expires_at: float = 0.0


def _assertion(account: ServiceAccount) -> str:
    """The signed JWT-bearer assertion, as google-auth makes it for a service account
    (blocking, CPU: run in a thread)."""
    from google.auth import crypt, jwt

    signer = crypt.RSASigner.from_service_account_info(dict(account.info))  # type: ignore[no-untyped-call]
    now = int(time.time())
    payload = {"iss": account.client_email, "scope": SCOPE, "aud": TOKEN_AUDIENCE, "iat": now,
               "exp": now + ASSERTION_LIFETIME}
    encoded: bytes = jwt.encode(signer, payload)  # type: ignore[no-untyped-call]
    return encoded.decode()


def _read_grant(status: int, body: bytes) -> tuple[str, float | None]:
    """``(token, seconds it lasts)`` of a 200; :class:`_Refused` with the OAuth error code."""
    try:
        answer: Any = json_loads(body)
    except ValueError:
        answer = None
    if status == 200 and isinstance(answer, dict) and isinstance(answer.get("access_token"), str) \
            and answer["access_token"]:
        lasts = answer.get("expires_in")
        if isinstance(lasts, bool) or not isinstance(lasts, int | float) or not 0 < lasts <= 86_400:
            return answer["access_token"], None
        return answer["access_token"], float(lasts)
    code = answer.get("error") if isinstance(answer, dict) else None
    raise _Refused(code if isinstance(code, str) else None)


async def _post(client: UpstreamClient, url: str, form: bytes, proxy: str) -> tuple[int, bytes]:
    """``(status, at most MAX_ANSWER + 1 bytes of the body)`` of one post, within TOKEN_TIMEOUT."""
    request = UpstreamRequest("POST", url, {"Accept": "application/json",
                                            "Content-Type": "application/x-www-form-urlencoded"}, form)
    async with asyncio.timeout(TOKEN_TIMEOUT):
        resp = await client.send(request, proxy=proxy, timeout=TOKEN_TIMEOUT)
        try:
            return resp.status_code, await resp.aread(MAX_ANSWER + 1)
        finally:
            await resp.aclose()


async def _grant(client: UpstreamClient, account: ServiceAccount, proxy: str = "") -> tuple[str, float | None]:
    """One JWT-bearer grant through ``proxy`` ("" direct); ``(token, seconds it lasts)``."""
    form = urlencode({"grant_type": GRANT_TYPE, "assertion": await asyncio.to_thread(_assertion, account)}).encode()
    for attempt in range(GRANT_RETRIES + 1):
        try:
            status, body = await _post(client, account.token_uri, form, proxy)
        except UpstreamAddressRefused:
            raise _Unreachable(refused=True) from None  # the same answer the next time: not tried again
        except (UpstreamTransportError, TimeoutError):
            status, body = 0, b""
        if 0 < status < 500 and len(body) <= MAX_ANSWER:
            return _read_grant(status, body)
        if attempt == GRANT_RETRIES:
            break
    raise _Unreachable()


def _exchange_error(exc: Exception) -> GatewayError:
    """A failed exchange, for the caller and the log: the OAuth error code at most (the
    token endpoint's full answer stays out of both)."""
    reason = "no answer"
    if isinstance(exc, _Refused):
        reason = "refused"
        if exc.code is not None and _OAUTH_ERROR.fullmatch(exc.code):
            reason = f"refused: {exc.code}"
    elif isinstance(exc, _Unreachable):
        reason = ("the gateway does not connect to the token endpoint's address" if exc.refused
                  else "the token endpoint could not be reached")
    return GatewayError(503, f"the channel's service account got no access token ({reason})",
                        code="channel:token_exchange_failed")


class TokenCache:
    """Access tokens by key (a hash of it), with the project each was issued for; grants go
    through the client ``upstream`` gives (``lambda: services.upstream``)."""

    def __init__(self, upstream: Callable[[], UpstreamClient], *, clock: Callable[[], float] = time.monotonic) -> None:
        self.upstream = upstream
        self.clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        #: token → project: the call a token authorises is made in its service account's project
        self._projects: OrderedDict[str, str] = OrderedDict()

    def project_of(self, token: str) -> str | None:
        return self._projects.get(token)

    def _entry(self, key: str) -> _Entry:
        digest = hashlib.sha256(key.encode()).hexdigest()
        entry = self._entries.get(digest)
        if entry is None:
            entry = self._entries[digest] = _Entry()
            while len(self._entries) > MAX_KEYS:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(digest)
        return entry

    async def token(self, key: str, account: ServiceAccount, proxy: str = "") -> str:
        entry = self._entry(key)
        if entry.token and self.clock() < entry.refresh_at:
            return entry.token
        async with entry.lock:
            now = self.clock()
            if entry.token and now < entry.refresh_at:
                return entry.token  # another request refreshed it while this one waited
            try:
                token, lasts = await _grant(self.upstream(), account, proxy)
            except Exception as exc:  # noqa: BLE001 - the grant's and the signer's errors, none logged whole
                err = _exchange_error(exc)
                log.warning("service account %s: %s", account.client_email, err.message)
                if entry.token and now < entry.expires_at:
                    entry.refresh_at = min(entry.expires_at, now + RETRY_AFTER)  # not on every request meanwhile
                    return entry.token  # the old token still works: use it, try again later
                raise err from None
            lifetime = lasts if lasts is not None and lasts > 0 else DEFAULT_LIFETIME
            entry.token, entry.expires_at = token, now + lifetime
            entry.refresh_at = now + lifetime - min(REFRESH_MARGIN, lifetime / 2)
            self._projects[token] = account.project_id
            while len(self._projects) > MAX_KEYS * 2:
                self._projects.popitem(last=False)
            return token
