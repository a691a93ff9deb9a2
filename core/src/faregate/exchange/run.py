"""Running an exchange through its endpoint's driver: every failure becomes an error
outcome in the client's format, and a reservation is never left open."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from faregate.errors import GatewayError
from faregate.observe.causes import describe_failure

if TYPE_CHECKING:
    from faregate.contracts.inbound import Outcome
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.policies import EndpointDriver

log = logging.getLogger("faregate.relay")


async def run_exchange(driver: EndpointDriver, ex: Exchange) -> Outcome:
    outcome = await _run(driver, ex)
    if not ex.reported and outcome.stream is None:  # nothing was reserved (or settled): report it here
        err = outcome.error
        ex.finish(outcome.status, "done" if err is None else err.code or err.type or "error")
    return outcome


async def _run(driver: EndpointDriver, ex: Exchange) -> Outcome:
    try:
        return await driver.handle(ex)
    except GatewayError as err:
        ex.fail(err)
        return ex.error(err)
    except asyncio.CancelledError:
        # the server cancels the view when the client closes the connection: nobody gets an
        # answer, so nobody pays; without this the reservation stayed held until the worker stopped
        ex.fail(GatewayError(499, "the client closed the connection before the answer", code="client_gone"))
        ex.finish(499, "client_gone")
        raise
    except Exception as exc:
        if ex.reservation is None:
            # before the reservation, what fails is the database (catch-up, lease): never
            # relay without a reservation. The cause is in the line itself (credentials
            # masked), not only in the traceback an operator's log search may not show
            log.exception("could not prepare request %s, answered 503 db_unavailable: %s", ex.request_id,
                          describe_failure(exc))
            failure = GatewayError(503, "the gateway cannot reach its database", code="db_unavailable")
        else:
            log.exception("relay failed (request %s): %s", ex.request_id, describe_failure(exc))
            failure = GatewayError(500, "internal error", type="new_api_error", code="internal_error")
            ex.fail(failure)
        return ex.error(failure)
