"""``faregate.api.Accounts``: the account rules (:class:`~faregate.accounts.service.AccountRules`)
as sign-in plugins use them inside a request. The client's address and login session are
read from the request, and a refusal is answered in new-api's envelope (a 429 with
``Retry-After``, a 503 at the cap of live sign-ins), so a view returns it as it is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from quart import Response, request, session

from faregate.accounts.errors import Refused
from faregate.accounts.service import AccountRules
from faregate.management.common import refusal
from faregate.management.login_answers import step_answer
from faregate.management.login_session import renew_own_session

if TYPE_CHECKING:
    from faregate.accounts.host import AccountsHost
    from faregate.principals import UserEntry
    from faregate.security.throttle import LoginThrottle


def _answer(refused: Refused | None) -> Response | None:
    return None if refused is None else refusal(refused)


def _login_throttle() -> LoginThrottle:
    from faregate.management.users import login_throttle  # the users blueprint owns its lifetime

    return login_throttle()


class Accounts(AccountRules):
    def __init__(self, gateway: AccountsHost) -> None:
        super().__init__(gateway, _login_throttle)

    def session_user(self) -> UserEntry | None:
        """The user the current request's login session belongs to, if it is a live login
        (not revoked, not banned); call it inside a request. No database read."""
        return self.session_user_of(session)

    async def revoke_sessions(self, user_id: int, *, keep_current: bool = False) -> None:
        """End every login session of the user (at their next request, on every worker);
        ``keep_current``: the caller's own session is re-issued and goes on (call it inside
        the user's own request)."""
        if keep_current:
            await renew_own_session(self._gw.feed, user_id)
        else:
            await super().revoke_sessions(user_id)

    async def log_in(self, user_id: int, method: str, *, second_factor_done: bool = False) -> Response:
        """The answer that ends a login (call it inside the request): the user's fresh
        session, or new-api's ``require_2fa`` step when a login-guarding second factor is
        set up and ``second_factor_done`` is false (a passkey is one on its own)."""
        try:
            step = await self.end_login(user_id, method, second_factor_done=second_factor_done)
        except Refused as refused:
            return refusal(refused)
        return step_answer(step)

    async def throttled(self, account_key: str, *, account_wide: bool = True) -> Response | None:
        """Count a guess at a secret of ``account_key`` (a user, an address) from this
        client, through the login throttle: a 429 answer when over a limit (this client's
        for the key, this client's overall, or the key's from every client together), else
        None. ``account_wide=False`` leaves out the last: for a step anyone could otherwise
        lock for the owner (a login's second step, which a locked login hands out whatever
        the password); pass the same to :meth:`throttle_passed`."""
        return _answer(await self.guess_refusal(request.remote_addr or "", account_key, account_wide=account_wide))

    async def rate_limited(self, name: str, *, limit: int, window: float, key: str = "",
                           what: str = "requests") -> Response | None:
        """Count one request of this client (by its IP, or by ``key``, an address say) in
        the rate limit ``name``: at most ``limit`` per ``window`` seconds, shared by every
        worker and node when Redis is configured. A 429 answer ("too many ``what``") when
        over, else None. Counted apart from failed logins and never given back: for
        requests that cost something (a mail sent, a row written), not for guesses
        (:meth:`throttled`)."""
        return _answer(await self.rate_refusal(request.remote_addr or "", name, limit=limit, window=window, key=key,
                                               what=what))

    async def signup_refused(self) -> Response | None:
        """Count an attempt of this client to make an account (new-api's CriticalRateLimit
        on sign-up: ``FAREGATE_CRITICAL_RATE_LIMIT`` per ``…_DURATION`` seconds per IP, on
        while ``…_ENABLE``). Call it before any work; the 429 when over, else None."""
        return _answer(await self.signup_refusal(request.remote_addr or ""))

    async def invitation_refused(self, inviter_code: str) -> Response | None:
        """Count a sign-up about to be credited to the owner of ``inviter_code`` (per
        inviter, from any addresses, so an inviter's reward cannot be farmed). Call it just
        before :meth:`create`; the 429 when over, else None."""
        return _answer(await self.invitation_refusal(inviter_code))

    async def start_refused(self, purpose: str, *, per_minute: int, max_live: int | None = None) -> Response | None:
        """For an anonymous request that leaves a one-time secret of ``purpose`` behind (an
        OAuth state, a WebAuthn challenge): at most ``per_minute`` per client IP, and none
        while ``max_live`` of them are live, so nobody can fill the table. The refusal
        (429, or 503 at the cap), else None."""
        return _answer(await self.start_refusal(request.remote_addr or "", purpose, per_minute=per_minute,
                                                max_live=max_live))

    async def throttle_passed(self, account_key: str, *, account_wide: bool = True) -> None:
        """The guess was right: it does not count against the client or the account."""
        await self.guess_passed(request.remote_addr or "", account_key, account_wide=account_wide)


__all__ = ["Accounts"]
