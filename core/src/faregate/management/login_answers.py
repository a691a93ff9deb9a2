"""The answers that end a login, in new-api's envelope: the account rules
(:mod:`faregate.accounts.login`) decide, this module answers ``ok`` with their step or
``fail`` with their refusal."""

from __future__ import annotations

from quart import Response, session

from faregate.accounts import login
from faregate.accounts.errors import Refused
from faregate.db import models as m
from faregate.management.common import gateway, ok, refusal
from faregate.management.devices import remember_device
from faregate.management.login_session import start_session


def step_answer(step: login.LoginStep) -> Response:
    """Write what ``step`` says the session holds, and answer its data."""
    if step.pending is not None:
        session.clear()
        session.update(step.pending)
    elif step.started is not None:
        start_session(step.started)
        remember_device(step.started.id)
    return ok(step.data, step.message)


async def complete_login(row: m.User, method: str, *, second_factor_done: bool = False) -> Response:
    """The user's fresh session, new-api's ``require_2fa`` step, or the refusal of a banned user."""
    gw = gateway()
    try:
        step = await login.complete_login(row, method, gw.services.accounts.flows, gw.second_factors.values(),
                                          second_factor_done=second_factor_done)
    except Refused as refused:
        return refusal(refused)
    return step_answer(step)


async def locked_login(row: m.User | None, password: str, wait: float) -> Response:
    """A locked account's password login (:func:`faregate.accounts.login.locked_login`)."""
    gw = gateway()
    try:
        step = await login.locked_login(row, password, wait, gw.services.accounts.flows, gw.second_factors.values())
    except Refused as refused:
        return refusal(refused)
    return step_answer(step)
