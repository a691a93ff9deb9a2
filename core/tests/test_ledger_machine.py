"""The books balance, whatever happens in whatever order (issue 17): a Hypothesis state
machine over top-ups (an order completed by its provider's event, replayed, or paid with the
wrong amount), redemption codes (redeemed, replayed by the same or another user),
reservations from the user and from a limited or an unlimited key, settlements (charging
less or more than reserved), refunds (a failed request), a settlement replayed, and flushes.
After every step, for the user and for the limited key:

* ``credits − spent = quota + held − unflushed`` (what the database holds for them, counting
  the leases this worker took out of it, less what was spent from those and not yet written);
* ``credits − spent − open reservations = what can still be reserved`` (the column plus the
  lease's free part): a reservation succeeds exactly when it fits;
* after a flush, the used-quota counters and the consume log rows add up to what was spent,
  and the top-up log rows to what was credited.

On SQLite, with the ledger's own flush loop not running so the steps decide when a flush
happens; ``faregate.testing.conformance`` covers the ledger on MariaDB and PostgreSQL."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)
from tortoise import Tortoise

from faregate.api import Completion, Quote, complete_top_up, create_top_up
from faregate.billing.ledger import InsufficientQuota, LogEntry, QuotaLedger, Reservation
from faregate.db import models as m
from faregate.db import storage
from faregate.default_plugins.storage_sqlite import SQLiteBackend
from faregate.management.redemptions import RedeemRefused, redeem_code

T = TypeVar("T")
PROVIDER = "machine"
TOKEN_QUOTA = 40_000
_serial = itertools.count()


@dataclass
class Open:
    reservation: Reservation
    amount: int
    token: int | None


@dataclass
class Order:
    trade_no: str
    quota: int
    money: Decimal


class LedgerMachine(RuleBasedStateMachine):
    loop: asyncio.AbstractEventLoop  # set by the test: the loop the database lives on

    opens = Bundle("opens")
    settled = Bundle("settled")
    orders = Bundle("orders")
    codes = Bundle("codes")

    def __init__(self) -> None:
        super().__init__()
        n = next(_serial)
        self.ledger = QuotaLedger(min_chunk=5_000, worker_id=f"machine-{n}")
        self.user = self.run(m.User.create(username=f"machine{n}", quota=0))
        self.other = self.run(m.User.create(username=f"bystander{n}", quota=0))
        self.token = self.run(m.Token.create(user_id=self.user.id, key_hash=uuid.uuid4().hex * 2, key_enc="e",
                                             key_mask="m", remain_quota=TOKEN_QUOTA))
        # the ledger's own loop would flush whenever it likes: the steps decide instead
        self.run(m.Worker.create(id=self.ledger.worker_id, heartbeat=0))
        self.credits = 0  # top-ups and redemptions credited to the user
        self.spent = 0  # charged to the user (every settlement)
        self.token_spent = 0  # charged through the limited key
        self.open_amount = 0
        self.token_open = 0
        self.flushed = True
        self.open_list: list[Open] = []

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    # ---- money in ------------------------------------------------------------------------
    @rule(target=orders, units=st.integers(1, 50))
    def order(self, units: int) -> Order:
        trade_no = f"M{uuid.uuid4().hex}"
        quote = Quote(amount=units, money=Decimal(units), currency="USD", quota=units * 1_000, payment_method="card")
        self.run(create_top_up(self.user.id, PROVIDER, quote, trade_no))
        return Order(trade_no, units * 1_000, Decimal(units))

    @rule(order=orders)
    def complete(self, order: Order) -> None:
        """The provider's event: the first completes and credits, a replay credits nothing."""
        done = self.run(m.TopUp.filter(trade_no=order.trade_no, status=m.TOPUP_SUCCESS).exists())
        outcome = self.run(complete_top_up(order.trade_no, provider=PROVIDER, money=order.money, currency="usd"))
        if done:
            assert outcome.status is Completion.ALREADY_DONE and outcome.quota == 0
        else:
            assert outcome.credited and outcome.quota == order.quota
            self.credits += order.quota

    @rule(order=orders, off=st.sampled_from([Decimal("0.01"), Decimal("-1")]))
    def complete_wrong_money(self, order: Order, off: Decimal) -> None:
        outcome = self.run(complete_top_up(order.trade_no, provider=PROVIDER, money=order.money + off,
                                           currency="USD"))
        assert not outcome.credited

    @rule(target=codes, quota=st.integers(1, 30_000))
    def code(self, quota: int) -> str:
        key = uuid.uuid4().hex
        self.run(m.Redemption.create(user_id=self.other.id, key=key, name="machine", quota=quota, created_time=0))
        return key

    @rule(key=codes, by_other=st.booleans())
    def redeem(self, key: str, by_other: bool) -> None:
        """The first redemption credits, by whoever; every later one (a replay, another
        user) credits nothing."""
        used = self.run(m.Redemption.filter(key=key, status=m.REDEMPTION_USED).exists())
        who = self.other if by_other else self.user
        try:
            quota = self.run(redeem_code(who.id, who.username, key))
        except RedeemRefused:
            assert used
            return
        assert not used
        if who is self.user:
            self.credits += quota

    # ---- money out -----------------------------------------------------------------------
    @rule(target=opens, amount=st.integers(0, 60_000), limited=st.booleans())
    def reserve(self, amount: int, limited: bool) -> Open | Any:
        token = self.token.id if limited else None
        fits = amount == 0 or (amount <= self.credits - self.spent - self.open_amount and (
            not limited or amount <= TOKEN_QUOTA - self.token_spent - self.token_open))
        try:
            reservation = self.run(self.ledger.reserve(self.user.id, token, amount))
        except InsufficientQuota:
            assert not fits, "a reservation that fits was refused"
            return multiple()  # nothing to add
        assert fits, f"a reservation of {amount} that does not fit was granted"
        self.open_amount += amount
        if token is not None:
            self.token_open += amount
        held = Open(reservation, amount, token)
        self.open_list.append(held)
        return held

    def _entry(self, quota: int, kind: int) -> LogEntry:
        return LogEntry(user_id=self.user.id, username=self.user.username, token_id=self.token.id,
                        token_name="k", model_name="m", quota=quota, prompt_tokens=1, completion_tokens=1,
                        use_time=0, is_stream=False, channel_id=0, group="default",
                        request_id=uuid.uuid4().hex, type=kind)

    def _close(self, held: Open, actual: int) -> None:
        self.open_list.remove(held)
        self.open_amount -= held.amount
        self.spent += actual
        if held.token is not None:
            self.token_open -= held.amount
            self.token_spent += actual
        self.flushed = False

    @rule(target=settled, held=consumes(opens), share=st.floats(0, 2))
    def settle(self, held: Open, share: float) -> Open:
        """Charge what the request cost: less than reserved, or more (the bounded overdraft)."""
        actual = int(held.amount * share)
        assert held.reservation.settle(actual, self._entry(actual, m.LOG_CONSUME))
        self._close(held, actual)
        return held

    @rule(target=settled, held=consumes(opens))
    def refund(self, held: Open) -> Open:
        """A failed request: the reservation goes back whole."""
        assert held.reservation.refund(self._entry(0, m.LOG_ERROR))
        self._close(held, 0)
        return held

    @rule(done=settled, actual=st.integers(0, 10_000))
    def settle_again(self, done: Open, actual: int) -> None:
        """A settlement replayed (a stream's finally after its end) charges nothing."""
        assert not done.reservation.settle(actual, self._entry(actual, m.LOG_CONSUME))
        assert not done.reservation.refund()

    @rule(give_back=st.booleans())
    def flush(self, give_back: bool) -> None:
        self.run(self.ledger.flush(return_all=give_back))
        self.flushed = True

    # ---- the books -----------------------------------------------------------------------
    def _unflushed(self, kind: str, ref: int) -> int:
        lease = self.ledger.leases.get((kind, ref))
        return lease.consumed_unflushed if lease is not None else 0

    def _free(self, kind: str, ref: int) -> int:
        lease = self.ledger.leases.get((kind, ref))
        return lease.free if lease is not None else 0

    async def _sum(self, query: Any, column: str) -> int:
        return sum(int(v) for v in await query.values_list(column, flat=True))

    @invariant()
    def books_balance(self) -> None:
        user = self.run(m.User.get(id=self.user.id))
        token = self.run(m.Token.get(id=self.token.id))
        held = self.run(self._sum(m.QuotaLease.filter(kind="user", ref_id=self.user.id), "held"))
        token_held = self.run(self._sum(m.QuotaLease.filter(kind="token", ref_id=self.token.id), "held"))
        assert user.quota + held - self._unflushed("user", self.user.id) == self.credits - self.spent
        assert token.remain_quota + token_held - self._unflushed("token", self.token.id) == \
            TOKEN_QUOTA - self.token_spent
        # what can still be reserved: the column, plus what the lease holds free
        assert user.quota + self._free("user", self.user.id) == self.credits - self.spent - self.open_amount
        assert token.remain_quota + self._free("token", self.token.id) == \
            TOKEN_QUOTA - self.token_spent - self.token_open
        if self.flushed:
            assert user.used_quota == self.spent and token.used_quota == self.token_spent
            logs = m.Log.filter(user_id=self.user.id)
            assert self.run(self._sum(logs.filter(type=m.LOG_CONSUME), "quota")) == self.spent
            assert self.run(self._sum(logs.filter(type=m.LOG_TOPUP), "quota")) == self.credits

    def teardown(self) -> None:
        """Every request ends (the open ones fail): the leases go back, the columns hold the
        books alone."""
        for held in list(self.open_list):
            assert held.reservation.refund()
            self._close(held, 0)
        self.run(self.ledger.stop())
        user = self.run(m.User.get(id=self.user.id))
        token = self.run(m.Token.get(id=self.token.id))
        assert user.quota == self.credits - self.spent and user.used_quota == self.spent
        assert token.remain_quota == TOKEN_QUOTA - self.token_spent
        assert not self.run(m.QuotaLease.filter(worker=self.ledger.worker_id).exists())


def test_the_books_balance_in_any_order(tmp_path: Path) -> None:
    loop = asyncio.new_event_loop()
    backend = SQLiteBackend(name="sqlite", schemes=("sqlite",))
    _, config = storage.tortoise_config(f"sqlite://{tmp_path}/machine.db", [backend])
    loop.run_until_complete(storage.migrate(config))
    loop.run_until_complete(storage.open_storage(config))
    LedgerMachine.loop = loop
    try:
        run_state_machine_as_test(LedgerMachine, settings=settings(
            max_examples=50, stateful_step_count=30, deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    finally:
        loop.run_until_complete(Tortoise.close_connections())
        loop.close()
