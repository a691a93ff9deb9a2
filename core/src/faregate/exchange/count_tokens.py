"""The ``count_tokens`` endpoint kind: a local estimate of a request's input tokens,
made by the format's own walker with the shared estimator (no upstream call, no
charge)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from faregate.exchange.admission import check_model_allowed

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.inbound import Outcome


class CountTokensDriver:
    kind = "count_tokens"

    async def handle(self, ex: Exchange) -> Outcome:
        principal = await ex.authenticate()
        raw, body = await ex.read_json()
        if len(raw) > ex.gateway.settings.offload_body_kb * 1024:
            # walking a big input is CPU work: in a worker thread, the loop serves others
            # meanwhile (the walk is Python code, which lets go of the GIL every few ms)
            count = await asyncio.to_thread(ex.format.count_tokens, body, ex.request)
        else:
            count = ex.format.count_tokens(body, ex.request)
        check_model_allowed(principal, count.model)
        return ex.json(ex.format.render_token_count(count))
