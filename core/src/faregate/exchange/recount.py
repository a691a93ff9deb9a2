"""Exact prompt (and answer) counts for the bills that need them: an answer whose upstream
reported no usage is billed on the gateway's own count, made with the model's exact
tokenizer when a plugin registered one (``register_token_counters``).

Nothing here runs while the upstream reports usage (it almost always does): a driver only
*offers* a recount (:func:`offer_exact_recount`: a closure, no counting), and the count is
made when a bill turns out to need it, by re-running the format's own estimate with the
exact tokenizer in force (:func:`faregate.tokens.exact_counting`), so no format keeps a
second copy of its counting code. Chat and every conversation kind built on its driver
(OpenAI's Responses) offer one; so do the OpenAI plugin's text completions, embeddings,
moderations, rerank and compaction, and the Gemini plugin's embeddings. A bill that is the
prompt alone (an answer with no text to count: embeddings, moderations, rerank) settles
through :func:`settle_on_prompt`.

Where it runs: before settling, where an await is possible (a regular answer: on the loop
when small, in a worker thread when big); settlement itself is synchronous (it may run in
a cancelled stream's ``finally``), so there a small prompt is counted inline and a big one
makes settlement wait for a worker thread in a task of its own. Inputs beyond
:data:`MAX_SIZE` keep the estimator's rule.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from faregate.canonical import Usage
from faregate.tokens import Tokenizer, exact_counting

if TYPE_CHECKING:
    from faregate.exchange.exchange import Exchange
    from faregate.exchange.host import ExchangeHost

log = logging.getLogger("faregate.relay")

#: where an exchange keeps its offered recount (``Exchange.extra``)
KEY = "faregate.recount"
#: work (request body bytes plus answer characters) counted on the event loop when no
#: await is possible: tiktoken takes 1 to 3 ms for 16 KB of adversarial text (long runs of
#: one letter, CJK, whitespace), well under that for prose
INLINE_SIZE = 16 * 1024
#: beyond this the estimator's rule stays: exact counting costs 0.05 to 0.3 s of CPU a megabyte,
#: which no fallback bill is worth (and a client could make the gateway spend it at will)
MAX_SIZE = 2 * 1024 * 1024


@dataclass(slots=True)
class Recount:
    """An exchange's offered recount and what came of it."""

    #: re-runs the format's own estimate of the prompt (called with a tokenizer in force)
    run: Callable[[], int]
    #: bounds the cost of ``run``: the request body's bytes
    size: int
    tokenizer: Tokenizer | None = None
    resolved: bool = False
    #: the exact prompt once counted; None: not (yet), the rule stays
    prompt: int | None = None
    #: counting the prompt was tried (done, failed or refused for its size)
    tried: bool = False
    #: settlement handed the count to a worker thread (:func:`claim_thread`)
    deferred: bool = False
    #: the answer's exact output tokens, when its text was at hand (regular answers)
    output: int | None = None


def offer_exact_recount(ex: Exchange, run: Callable[[], int], size: int) -> None:
    """Let the exchange's prompt be counted exactly should its bill need it (no usage from
    the upstream). ``run`` re-runs the format's own prompt estimate (the summary's
    ``prompt_tokens``); it is called, if ever, with the exact tokenizer in force, in a
    worker thread when ``size`` (the request body's bytes) is large. Costs nothing until a
    bill needs it. The chat driver offers every chat request's; other drivers offer their own
    (see the module docstring)."""
    ex.extra[KEY] = Recount(run, size)


def find_tokenizer(gateway: ExchangeHost, model: str) -> Tokenizer | None:
    """The gateway's exact tokenizer for ``model``; a counter that raises is logged and
    treated as knowing nothing (a bill must never fail for it)."""
    try:
        return gateway.tokenizer(model)
    except Exception:
        log.exception("a token counter failed to choose a tokenizer for %s", model)
        return None


def _state(ex: Exchange) -> Recount | None:
    """The exchange's recount, if it has one and a tokenizer knows its model (the model the
    upstream was called with: a channel's mapping names the real one)."""
    state = ex.extra.get(KEY)
    if not isinstance(state, Recount):
        return None
    if not state.resolved:
        state.resolved = True
        state.tokenizer = find_tokenizer(ex.gateway, ex.upstream_model or ex.model)
    return state if state.tokenizer is not None else None


def _count(state: Recount, prompt: bool, texts: Sequence[str]) -> None:
    """The counting itself (on the loop or in a worker thread); failures keep the rule."""
    tokenizer = state.tokenizer
    assert tokenizer is not None
    if prompt:
        state.tried = True
        try:
            with exact_counting(tokenizer):
                state.prompt = state.run()
        except Exception:
            log.warning("counting the prompt with %s failed; the estimate stays", tokenizer.name, exc_info=True)
    if texts:
        try:
            state.output = sum(tokenizer.count(text) for text in texts if text)
        except Exception:
            log.warning("counting the answer with %s failed; the estimate stays", tokenizer.name, exc_info=True)


async def prepare(ex: Exchange, output: Sequence[str] = ()) -> None:
    """Count exactly what a bill without upstream usage will need: the prompt and, when the
    answer's text is at hand, its output; in a worker thread when that is much."""
    state = _state(ex)
    if state is None:
        return
    prompt = not state.tried
    if prompt and state.size > MAX_SIZE:
        state.tried, prompt = True, False
    out_size = sum(len(text) for text in output)
    texts = output if out_size <= MAX_SIZE else ()
    if not prompt and not texts:
        return
    work = (state.size if prompt else 0) + (out_size if texts else 0)
    if work <= INLINE_SIZE:
        _count(state, prompt, texts)
    else:
        await asyncio.to_thread(_count, state, prompt, texts)


def claim_thread(ex: Exchange) -> bool:
    """True, once, when the prompt can be counted exactly but not on the event loop:
    settlement then waits for :func:`prepare` in a task of its own (and asks again after
    it, getting False)."""
    state = _state(ex)
    if state is None or state.tried or state.deferred or not INLINE_SIZE < state.size <= MAX_SIZE:
        return False
    state.deferred = True
    return True


def exact_counts(ex: Exchange) -> tuple[int | None, int | None, str]:
    """For settlement (synchronous): the exact prompt and output tokens where known (None:
    the estimator's rule stays) and the tokenizer's name ("" when neither is exact). A
    prompt not counted yet is counted now if it is small enough for the event loop."""
    state = _state(ex)
    if state is None:
        return None, None, ""
    if not state.tried and state.size <= INLINE_SIZE:
        _count(state, True, ())
    assert state.tokenizer is not None
    exact = state.prompt is not None or state.output is not None
    return state.prompt, state.output, state.tokenizer.name if exact else ""


async def settle_on_prompt(ex: Exchange, *, end_reason: str = "done") -> int:
    """Settle an answer that reported no usage and whose bill is its prompt alone (no
    output text to count: embeddings, moderations, rerank): on the exact count where a
    recount was offered and a tokenizer knows the model (in a worker thread when big),
    else on the summary's estimate; logged ``usage_source: estimated``, with
    ``token_counter`` when exact. Returns the input tokens billed."""
    assert ex.summary is not None, "begin before settling"
    await prepare(ex)
    state = _state(ex)
    exact = state.prompt if state is not None else None
    details = None
    if state is not None and exact is not None:
        assert state.tokenizer is not None
        details = {"token_counter": state.tokenizer.name}
    tokens = max(1, exact if exact is not None else ex.summary.prompt_tokens)
    ex.settle(Usage(input_tokens=tokens), end_reason=end_reason, estimated=True, details=details)
    return tokens
