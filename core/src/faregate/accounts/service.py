"""``services.accounts``: what sign-in plugins (email, TOTP, passkeys, OAuth, Telegram,
WeChat) may do with accounts, through the plugin API. The core keeps the rules in one
place: how an account is made (quota, invitation rewards), how a login ends (second factor,
fresh session), how sessions are revoked, how one-time secrets are kept, how guesses are
throttled and which email addresses are accepted.

:class:`AccountRules` holds those rules without HTTP: a refusal is a
:class:`~faregate.accounts.errors.Refused` value, the client's address an argument.
``faregate.api.Accounts`` (:mod:`faregate.management.accounts_door`) is the door plugins
use, which reads the request and answers refusals in new-api's envelope."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tortoise.exceptions import IntegrityError

from faregate.accounts.errors import Refused, too_many
from faregate.accounts.flows import Flows
from faregate.accounts.login import LoginStep, complete_login
from faregate.accounts.sessions import live_login, revoke_sessions
from faregate.accounts.signup import SignupError, create_account
from faregate.db import models as m
from faregate.security.passwords import check_login_password, hash_password_async

if TYPE_CHECKING:
    from faregate.accounts.host import AccountsHost
    from faregate.principals import UserEntry
    from faregate.security.throttle import LoginThrottle

#: the one-time secret purpose of sign-up codes sent by email (``POST /api/user/register``
#: and ``/api/oauth/email/bind`` check them)
EMAIL_VERIFICATION = "email_verification"
#: live secrets of one purpose that anonymous starts may leave (:meth:`AccountRules.start_refusal`)
MAX_LIVE_STARTS = 10_000
#: the rate limits of account creation: per client IP, and per inviter (an invitation code's owner)
SIGNUPS_PER_IP, SIGNUPS_PER_INVITER = "signup", "signup_invited"


@dataclass(frozen=True, slots=True)
class Account:
    """A user as sign-in code sees it (never the password hash)."""

    id: int
    username: str
    display_name: str
    email: str
    role: int
    status: int
    group: str
    has_password: bool

    @property
    def enabled(self) -> bool:
        return self.status == m.USER_ENABLED


def account(row: m.User) -> Account:
    return Account(id=row.id, username=row.username, display_name=row.display_name, email=row.email,
                   role=row.role, status=row.status, group=row.group, has_password=bool(row.password_hash))


def normalize_email(email: str) -> str:
    return email.strip().lower()


@dataclass(frozen=True, slots=True)
class OneTimeSecret:
    """What a live one-time secret carried (see :meth:`AccountRules.issue_secret`)."""

    user_id: int
    subject: str
    payload: str


class AccountRules:
    def __init__(self, gateway: AccountsHost, login_throttle: Callable[[], LoginThrottle]) -> None:
        # plugins take this door while the gateway is being built: nothing here reads the
        # gateway before it serves
        self._gw = gateway
        #: this worker's login throttle (the HTTP layer makes it on first use and closes it)
        self._login_throttle = login_throttle
        self._flows: Flows | None = None

    @property
    def flows(self) -> Flows:
        if self._flows is None:
            self._flows = Flows(self._gw.box)
        return self._flows

    # ---- finding ------------------------------------------------------------------------------
    async def get(self, user_id: int) -> Account | None:
        row = await m.User.get_or_none(id=user_id)
        return account(row) if row is not None else None

    async def by_email(self, email: str) -> Account | None:
        email = normalize_email(email)
        row = await m.User.filter(email=email).first() if email else None
        return account(row) if row is not None else None

    async def count(self) -> int:
        """How many users there are."""
        return await m.User.all().count()

    async def email_taken(self, email: str, *, except_user: int = 0) -> bool:
        email = normalize_email(email)
        return bool(email) and await m.User.filter(email=email).exclude(id=except_user).exists()

    def email_problem(self, email: str) -> str | None:
        """Why this address may not sign up or be bound (new-api's domain allow list and
        alias rule), or None."""
        options = self._gw.snapshot.options
        local, _, domain = normalize_email(email).rpartition("@")
        if not local or not domain or "." not in domain:
            return "not a valid email address"
        if options.value("EmailDomainRestrictionEnabled") and domain not in options.value("EmailDomainWhitelist"):
            return "this email domain is not accepted here (the administrator keeps an allow list)"
        if options.value("EmailAliasRestrictionEnabled") and ("+" in local or "." in local):
            return "email aliases (addresses with '+' or '.' before the @) are not accepted here"
        return None

    def session_user_of(self, session: Mapping[str, Any]) -> UserEntry | None:
        """The user a login session (its cookie's values) belongs to, if it is a live login
        (not revoked, not banned). No database read."""
        user = self._gw.snapshot.users.get(int(session.get("id") or 0))
        if user is None or not live_login(user, session) or user.status != m.USER_ENABLED:
            return None
        return user

    # ---- changing -----------------------------------------------------------------------------
    async def create(self, *, username: str, email: str = "", display_name: str = "", password: str | None = None,
                     inviter_code: str = "", prefix: str = "user_") -> Account:
        """A new common user: ``username`` if free (else ``prefix`` + a number), the
        starting quota and invitation rewards. :class:`SignupError` when it cannot be made."""
        password_hash = await hash_password_async(password) if password else ""
        row, touched = await create_account(self._gw.snapshot.options, username=username, email=normalize_email(email),
                                            display_name=display_name, password_hash=password_hash,
                                            inviter_code=inviter_code, prefix=prefix)
        for user_id in (row.id, *touched):
            await self._gw.feed.publish("user", user_id)
        return account(row)

    async def check_password(self, user_id: int, password: str) -> bool:
        """Off the event loop; a user without a password costs the same and fails."""
        row = await m.User.get_or_none(id=user_id)
        return await check_login_password(row.password_hash if row is not None else None, password)

    async def set_password(self, user_id: int, password: str) -> None:
        """A new password; every login session of the user is revoked."""
        await m.User.filter(id=user_id).update(password_hash=await hash_password_async(password))
        await revoke_sessions(self._gw.feed, user_id)

    async def set_email(self, user_id: int, email: str) -> bool:
        """False when another user has the address."""
        email = normalize_email(email)
        if await self.email_taken(email, except_user=user_id):
            return False
        await m.User.filter(id=user_id).update(email=email)
        await self._gw.feed.publish("user", user_id)
        return True

    async def revoke_sessions(self, user_id: int) -> None:
        """End every login session of the user (at their next request, on every worker)."""
        await revoke_sessions(self._gw.feed, user_id)

    async def end_login(self, user_id: int, method: str, *, second_factor_done: bool = False) -> LoginStep:
        """The end of a login (inside the request): the user's fresh session, or new-api's
        ``require_2fa`` step when a login-guarding second factor is set up and
        ``second_factor_done`` is false; :class:`Refused` for an unknown or banned user."""
        row = await m.User.get_or_none(id=user_id)
        if row is None:
            raise Refused("user not found")
        return await complete_login(row, method, self.flows, self._gw.second_factors.values(),
                                    second_factor_done=second_factor_done)

    async def record(self, user_id: int, content: str) -> None:
        """A management log row about the user (what an admin or the user changed)."""
        row = await m.User.get_or_none(id=user_id).only("username")
        await m.Log.create(user_id=user_id, username=row.username if row else "", type=m.LOG_MANAGE,
                           created_at=int(time.time()), content=content[:2000])

    # ---- outside identities (new-api's github_id, telegram_id … columns) -----------------------
    async def bound_user(self, provider: str, subject: str) -> Account | None:
        binding = await m.UserBinding.get_or_none(provider=provider, subject=subject)
        return await self.get(binding.user_id) if binding is not None else None

    async def bind(self, user_id: int, provider: str, subject: str) -> bool:
        """False when the identity is bound to someone, or the user has one of this provider."""
        try:
            await m.UserBinding.create(user_id=user_id, provider=provider, subject=subject,
                                       created_at=int(time.time()))
        except IntegrityError:
            return False
        return True

    async def unbind(self, user_id: int, provider: str) -> bool:
        return bool(await m.UserBinding.filter(user_id=user_id, provider=provider).delete())

    async def bindings(self, user_id: int) -> dict[str, str]:
        return {b.provider: b.subject for b in await m.UserBinding.filter(user_id=user_id)}

    # ---- one-time secrets, guesses ------------------------------------------------------------
    async def issue_secret(self, purpose: str, *, ttl: int, secret: str | None = None, subject: str = "",
                           user_id: int = 0, payload: str = "") -> str:
        """Keep a one-time secret (random unless given: an email code) for ``ttl``
        seconds; only its keyed hash is stored. A subject has one live secret per purpose."""
        return await self.flows.issue(purpose, ttl=ttl, secret=secret, subject=subject, user_id=user_id,
                                      payload=payload)

    async def take_secret(self, purpose: str, secret: str, *, subject: str = "") -> OneTimeSecret | None:
        """Use a secret up: its contents, or None when unknown, expired or used already."""
        row = await self.flows.take(purpose, secret, subject=subject)
        return OneTimeSecret(row.user_id, row.subject, row.payload) if row is not None else None

    async def claim_once(self, purpose: str, secret: str, *, ttl: int) -> bool:
        """Mark a bearer proof used (signed widget data, say), atomically: True the first
        time within ``ttl`` seconds, False for a replay, also one racing the first use."""
        return await self.flows.claim(purpose, secret, ttl=ttl)

    async def live_secrets(self, purpose: str) -> int:
        """How many secrets of ``purpose`` are live: to bound what anonymous requests may
        leave in the table (refuse a new one past a cap)."""
        return await self.flows.live(purpose)

    async def take_code(self, purpose: str, subject: str, code: str) -> OneTimeSecret | None:
        """Like :meth:`take_secret` for a short code sent to ``subject``: each wrong code
        counts, and a code dies after five."""
        row = await self.flows.take_code(purpose, subject, code)
        return OneTimeSecret(row.user_id, row.subject, row.payload) if row is not None else None

    async def guess_refusal(self, client_ip: str, account_key: str, *, account_wide: bool = True) -> Refused | None:
        """Count a guess at a secret of ``account_key`` from ``client_ip`` through the login
        throttle: the 429 when over a limit, else None (``faregate.api.Accounts.throttled``)."""
        refusal = await self._login_throttle().attempt(client_ip, account_key, account_wide=account_wide)
        if refusal is None:
            return None
        return too_many("failed attempts", refusal.wait)

    async def rate_refusal(self, client_ip: str, name: str, *, limit: int, window: float, key: str = "",
                           what: str = "requests") -> Refused | None:
        """Count one request of ``client_ip`` (or of ``key``) in the rate limit ``name``: the
        429 when over, else None (``faregate.api.Accounts.rate_limited``)."""
        throttle = self._login_throttle()
        who = f"key:{key}" if key else f"ip:{throttle.client_key(client_ip)}"
        wait = await throttle.limit(name, who, limit, window)
        if wait is None:
            return None
        return too_many(what, wait)

    async def signup_refusal(self, client_ip: str) -> Refused | None:
        """Count an attempt of ``client_ip`` to make an account (new-api's CriticalRateLimit
        on sign-up: ``FAREGATE_CRITICAL_RATE_LIMIT`` per ``…_DURATION`` seconds per IP, on
        while ``…_ENABLE``). The 429 when over, else None."""
        settings = self._gw.settings
        if not settings.critical_rate_limit_enable:
            return None
        return await self.rate_refusal(client_ip, SIGNUPS_PER_IP, limit=int(settings.critical_rate_limit),
                                       window=float(settings.critical_rate_limit_duration), what="sign-ups")

    async def invitation_refusal(self, inviter_code: str) -> Refused | None:
        """Count a sign-up about to be credited to the owner of ``inviter_code``: at most
        ``FAREGATE_INVITATION_CODE_RATE_LIMIT`` per ``…_DURATION`` seconds, from any
        addresses, so an inviter's reward cannot be farmed. Counted per inviter (not per
        spelling of the code: a case-insensitive database finds one inviter under several);
        a code nobody owns earns nothing and is not counted. The 429 when over, else None."""
        settings = self._gw.settings
        limit, window = int(settings.invitation_code_rate_limit), float(settings.invitation_code_rate_limit_duration)
        if not inviter_code or limit <= 0 or window <= 0:
            return None
        inviter = await m.User.filter(aff_code=inviter_code).first().values_list("id", flat=True)
        if inviter is None:
            return None
        return await self.rate_refusal("", SIGNUPS_PER_INVITER, key=f"user:{inviter}", limit=limit, window=window,
                                       what="sign-ups with this invitation code")

    async def start_refusal(self, client_ip: str, purpose: str, *, per_minute: int,
                            max_live: int | None = None) -> Refused | None:
        """For an anonymous request that leaves a one-time secret of ``purpose`` behind (an
        OAuth state, a WebAuthn challenge): at most ``per_minute`` per client IP, and none
        while ``max_live`` (:data:`MAX_LIVE_STARTS`) of them are live, so nobody can fill
        the table. The refusal (429, or 503 at the cap), else None."""
        refused = await self.rate_refusal(client_ip, purpose, limit=per_minute, window=60)
        cap = MAX_LIVE_STARTS if max_live is None else max_live
        if refused is None and cap and await self.live_secrets(purpose) >= cap:
            refused = Refused("too many sign-ins are under way; try again in a minute", status=503, retry_after=60)
        return refused

    async def guess_passed(self, client_ip: str, account_key: str, *, account_wide: bool = True) -> None:
        """The guess was right: it does not count against the client or the account."""
        await self._login_throttle().succeeded(client_ip, account_key, account_wide=account_wide)

    # ---- secrets at rest ----------------------------------------------------------------------
    def seal(self, plaintext: str, aad: str) -> str:
        """Encrypt (AES-256-GCM with ``FAREGATE_CRYPTO_SECRET``, as channel keys): ``aad``
        binds the value to its row, e.g. ``totp:<user id>``."""
        return self._gw.box.encrypt(plaintext, aad)

    def unseal(self, sealed: str, aad: str) -> str:
        return self._gw.box.decrypt(sealed, aad)

    def digest(self, value: str, purpose: str) -> str:
        """A keyed hash of a short secret (a backup code) to store and look up by."""
        return self._gw.box.digest(value, purpose)


__all__ = ["EMAIL_VERIFICATION", "Account", "AccountRules", "OneTimeSecret", "SignupError", "normalize_email"]
