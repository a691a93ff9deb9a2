"""The ``count_tokens`` endpoint kind: a local count of a request's input tokens, made by
the format's own walker (no upstream call, no charge): with the model's exact tokenizer
when a plugin registered one that knows the model (``register_token_counters``), else
with the shared estimator's rule."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from faregate.exchange import recount
from faregate.exchange.admission import check_model_allowed, run_on_body
from faregate.tokens import exact_counting

if TYPE_CHECKING:
    from faregate.contracts import InboundFormat, TokenCount
    from faregate.contracts.inbound import InboundRequest, Outcome
    from faregate.exchange.exchange import Exchange
    from faregate.tokens import Tokenizer

log = logging.getLogger("faregate.relay")

class CountTokensDriver:
    kind = "count_tokens"

    async def handle(self, ex: Exchange) -> Outcome:
        principal = await ex.authenticate()
        raw, body = await ex.read_json()
        # walking a big input is CPU work: in a worker thread, in its turn among big bodies;
        # no sensitive-word scan (a count is never refused for its words, as in new-api)
        count = await run_on_body(ex, raw, ex.format.count_tokens, body, ex.request)
        check_model_allowed(principal, count.model)
        # the walk above validated the request and named its model; a tokenizer that knows
        # the model counts it again exactly (bounded: a bigger input keeps the estimate)
        tokenizer = recount.find_tokenizer(ex.gateway, count.model)
        if tokenizer is not None and len(raw) <= recount.MAX_SIZE:
            if len(raw) > recount.INLINE_SIZE:
                count = await asyncio.to_thread(_count_exactly, tokenizer, ex.format, body, ex.request, count)
            else:
                count = _count_exactly(tokenizer, ex.format, body, ex.request, count)
        return ex.json(ex.format.render_token_count(count))


def _count_exactly(tokenizer: Tokenizer, fmt: InboundFormat, body: dict[str, Any], request: InboundRequest,
                   estimate: TokenCount) -> TokenCount:
    try:
        with exact_counting(tokenizer):
            return fmt.count_tokens(body, request)
    except Exception:  # a broken tokenizer: the client still gets the estimate
        log.warning("counting with %s failed; answering the estimate", tokenizer.name, exc_info=True)
        return estimate
