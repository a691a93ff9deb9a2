"""A service account's OAuth access tokens: the JWT-bearer grant (an assertion signed with
the account's private key, posted to its ``token_uri``), done by google-auth
(``google.oauth2.service_account.Credentials``) in a worker thread so the event loop never
waits on it. A token is cached per key until shortly before it expires, and shared by every
request of the worker: concurrent requests that find it stale wait for one refresh
(single flight), never start one each. Each worker process holds its own token (a token is
a secret: it is kept in memory only, never written where another process could read it).
Nothing of a key or a token is ever logged; a failed exchange says only the OAuth error code.
The grant goes through the channel's proxy (``setting.proxy``) when it has one, as its calls do.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faregate.api import GatewayError
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
_OAUTH_ERROR = re.compile(r"[a-z_]{1,40}")


@dataclass(slots=True)
class _Entry:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    token: str = ""
    refresh_at: float = 0.0
    expires_at: float = 0.0


def _fetch(account: ServiceAccount, proxy: str = "") -> tuple[str, float | None]:
    """One JWT-bearer grant (blocking: run in a thread), through the channel's proxy when it
    has one. ``(token, seconds it lasts)``."""
    import requests
    from google.auth.transport.requests import Request
    from google.oauth2 import service_account

    class _Bounded(Request):
        """google-auth's requests transport with a deadline and no redirects: the assertion
        goes to the token_uri the key names and nowhere else."""

        def __call__(self, url: str, method: str = "GET", body: Any = None, headers: Any = None,
                     timeout: float | None = None, **kwargs: Any) -> Any:
            return super().__call__(url, method=method, body=body, headers=headers,  # type: ignore[no-untyped-call]
                                    timeout=TOKEN_TIMEOUT, allow_redirects=False, **kwargs)

    credentials = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
        dict(account.info), scopes=[SCOPE])
    session = requests.Session()
    if proxy:
        session.proxies = {"http": proxy, "https": proxy}
    with session:
        credentials.refresh(_Bounded(session))
    expiry = credentials.expiry
    lasts = None
    if isinstance(expiry, datetime.datetime):  # naive UTC, as google-auth keeps it
        lasts = (expiry - datetime.datetime.now(datetime.UTC).replace(tzinfo=None)).total_seconds()
    return str(credentials.token), lasts


def _exchange_error(exc: Exception) -> GatewayError:
    """A failed exchange, for the caller and the log: the OAuth error code at most (the
    token endpoint's full answer stays out of both)."""
    from google.auth import exceptions

    reason = "no answer"
    if isinstance(exc, exceptions.RefreshError):
        reason = "refused"
        data = exc.args[1] if len(exc.args) > 1 else None
        code = data.get("error") if isinstance(data, dict) else None
        if isinstance(code, str) and _OAUTH_ERROR.fullmatch(code):
            reason = f"refused: {code}"
    elif isinstance(exc, exceptions.TransportError):
        reason = "the token endpoint could not be reached"
    return GatewayError(503, f"the channel's service account got no access token ({reason})",
                        code="channel:token_exchange_failed")


class TokenCache:
    """Access tokens by key (a hash of it), with the project each was issued for."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
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
                token, lasts = await asyncio.to_thread(_fetch, account, proxy)
            except Exception as exc:  # noqa: BLE001 - google-auth's and the transport's errors, none logged whole
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
