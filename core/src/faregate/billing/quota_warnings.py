"""Quota warnings (new-api's ``checkAndSendQuotaNotify``): when a user's remaining quota
falls below their threshold (their own ``quota_warning_threshold`` setting, else the
``QuotaRemindThreshold`` option; 0 turns warnings off), they are told once, the way their
``notify_type`` says, and not again until the quota has been seen above the threshold.

Nothing here is on a request's path. The ledger tells :meth:`QuotaWarnings.charged` which
users a flush charged; a background task checks those users at most once per
``interval`` seconds, all of them in one statement (their balances, the quota their
leases hold and who was warned already, read at one instant: a lease taken between two
reads would move money from the balance to the leases unseen and make a warned user look
recovered). "Warned" is a row in ``quota_warnings`` (one per user, unique): a worker sends
only when its INSERT made the row, so many workers seeing the same balance warn once; the
row is deleted (by its id: a warning made since the read stays) when the balance is seen
above the threshold (after a charge, or a credit that calls
:meth:`QuotaWarnings.recheck`). A notification
that fails is logged and not retried (new-api's behaviour): the row stays, so a broken
webhook is not called again on every request."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from tortoise.exceptions import IntegrityError
from tortoise.expressions import RawSQL, Subquery
from tortoise.functions import Sum

from faregate.accounts.notify import Notification, Notifier, NotifyTarget, stored_settings, target_of
from faregate.db import models as m

if TYPE_CHECKING:
    from tortoise.queryset import ValuesQuery

    from faregate.billing.options import BillingOptions

log = logging.getLogger("faregate.billing")

#: users checked per query
BATCH = 500
#: new-api's dto.NotifyTypeQuotaExceed
QUOTA_EXCEED = "quota_exceed"
TITLE = "Your quota is running low"
#: new-api's text, with the same placeholders: the title, the remaining quota, the top-up link twice
CONTENT = ("{{value}}: your remaining quota is {{value}}. Top up to keep using the service: "
           "<a href='{{value}}'>{{value}}</a>")


def format_quota(quota: int, options: BillingOptions) -> str:
    """A quota as the site shows it (``general_setting.quota_display_type``), as new-api's
    ``FormatQuota``."""
    display = options.value("general_setting.quota_display_type")
    dollars = quota / options.quota_per_unit
    if display == "TOKENS":
        return f"{quota} quota"
    if display == "CNY":
        return f"\u00a5{dollars * options.value('USDExchangeRate'):.6f}"
    if display == "CUSTOM":
        symbol = options.value("general_setting.custom_currency_symbol") or "\u00a4"
        return f"{symbol}{dollars * options.value('general_setting.custom_currency_exchange_rate'):.6f}"
    return f"${dollars:.6f}"


def warning(remaining: int, options: BillingOptions) -> Notification:
    link = f"{str(options.value('ServerAddress')).rstrip('/')}/console/topup"
    return Notification(QUOTA_EXCEED, TITLE, CONTENT, (TITLE, format_quota(remaining, options), link, link))


def threshold_of(settings: Mapping[str, Any], options: BillingOptions) -> int:
    """The user's own ``quota_warning_threshold`` when set (non-zero), else ``QuotaRemindThreshold``."""
    own = settings.get("quota_warning_threshold")
    if isinstance(own, int | float) and not isinstance(own, bool) and own > 0:
        return int(own)
    return options.quota_remind_threshold


def balances_and_warnings(user_ids: list[int]) -> ValuesQuery[Literal[False]]:
    """Each user's row with ``held`` (what their user leases hold) and ``warning`` (the id of
    their warning row, or None), in one statement: money moving between the balance and a
    lease meanwhile is seen on one side, never on both or neither."""
    # the outer row's id, named by its table (a bare "id" would be the subquery's own);
    # unquoted, a plain name every engine reads alike
    user_id = RawSQL(f"{m.User._meta.db_table}.id")
    leases = m.QuotaLease.filter(kind="user", ref_id=user_id).annotate(total=Sum("held")).values("total")
    warning_row = m.QuotaWarning.filter(user_id=user_id).values("id")
    return m.User.filter(id__in=user_ids).annotate(held=Subquery(leases), warning=Subquery(warning_row)).values(
        "id", "username", "email", "quota", "setting", "held", "warning")


class QuotaWarnings:
    def __init__(self, options: Callable[[], BillingOptions], notifiers: Mapping[str, Notifier],
                 spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]], *, interval: float = 1.0) -> None:
        self.options = options
        self.notifiers = notifiers
        self.spawn = spawn
        self.interval = interval
        self.pending: set[int] = set()
        #: set by close(): the loop's pause between checks ends at once (the gateway's stop
        #: waits for the loop, which used to sleep out up to ``interval`` with nothing to do)
        self._closing = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None

    @property
    def closed(self) -> bool:
        return self._closing.is_set()

    # -- told by the ledger (synchronous, cheap) ---------------------------------------
    def charged(self, user_ids: Iterable[int]) -> None:
        """These users were charged: check their balances soon."""
        if self.closed:
            return
        self.pending.update(user_ids)
        if self.pending and (self._task is None or self._task.done()):
            self._task = self.spawn(self._run())

    #: a credit (a redemption, a top-up, an admin's change): the warning re-arms if the
    #: balance is now above the threshold
    recheck = charged

    def close(self) -> None:
        self._closing.set()
        self.pending.clear()

    async def _run(self) -> None:
        while self.pending and not self.closed:
            batch, self.pending = sorted(self.pending), set()
            for start in range(0, len(batch), BATCH):  # bounded IN lists, however many users spent
                try:
                    await self.check(batch[start:start + BATCH])
                except Exception:
                    log.exception("quota warnings: the check failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), self.interval)

    # -- the check ---------------------------------------------------------------------
    async def check(self, user_ids: Collection[int]) -> list[int]:
        """Warn those of ``user_ids`` below their threshold and not yet warned; re-arm those
        above. Returns the users a warning was sent to (or attempted)."""
        ids = list(user_ids)
        if not ids:
            return []
        options = self.options()
        recovered: list[int] = []
        low: list[tuple[dict[str, Any], dict[str, Any], int, int]] = []
        for row in await balances_and_warnings(ids):
            settings = stored_settings(row["setting"] or "")
            threshold = threshold_of(settings, options)
            remaining = int(row["quota"]) + int(row["held"] or 0)
            if threshold <= 0 or remaining >= threshold:
                if row["warning"] is not None:
                    recovered.append(int(row["warning"]))
            elif row["warning"] is None:
                low.append((row, settings, remaining, threshold))
        if recovered:
            await m.QuotaWarning.filter(id__in=recovered).delete()
        sent: list[int] = []
        for row, settings, remaining, threshold in low:
            target, kind = target_of(int(row["id"]), str(row["username"]), str(row["email"] or ""), settings)
            notifier = self.notifiers.get(kind)
            if notifier is None or (kind == "email" and not target.email):
                log.debug("quota warnings: user %s has no way to be told (%s)", target.user_id, kind)
                continue
            try:
                await m.QuotaWarning.create(user_id=target.user_id, remaining=remaining, threshold=threshold,
                                            created_at=int(time.time()))
            except IntegrityError:
                continue  # warned already (another worker, just now)
            sent.append(target.user_id)
            self.spawn(self._send(notifier, target, warning(remaining, options)))
        return sent

    async def _send(self, notifier: Notifier, target: NotifyTarget, note: Notification) -> None:
        try:
            await notifier.send(target, note)
        except Exception as exc:  # noqa: BLE001 - a notifier's failure is logged, never raised
            log.warning("quota warning to user %s by %s failed: %s", target.user_id, notifier.kind,
                        str(exc) or type(exc).__name__)
        else:
            log.info("quota warning sent to user %s by %s", target.user_id, notifier.kind)
