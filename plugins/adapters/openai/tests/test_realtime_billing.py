"""The realtime session's bill without a gateway: a ``response.done``'s usage in the
gateway's convention, the reservation's size, the estimate of a response cut off."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

import pytest

from faregate.api import GatewayError, Price, Usage, usage_quota
from faregate_adapter_openai.realtime import protocol as p
from faregate_adapter_openai.realtime.billing import SessionBill

PRICE = Price(model_ratio=2, completion_ratio=4, cache_ratio=0.1, audio_ratio=8, audio_completion_ratio=2)


def usage(**details: Any) -> dict[str, Any]:
    return {"usage": {"input_tokens": 1000, "output_tokens": 300, "total_tokens": 1300,
                      "input_token_details": {"text_tokens": 400, "audio_tokens": 600, "cached_tokens": 500,
                                              **details},
                      "output_token_details": {"text_tokens": 100, "audio_tokens": 200}}}


def test_cached_audio_from_the_breakdown_or_in_proportion() -> None:
    told = p.response_usage(usage(cached_tokens_details={"text_tokens": 200, "audio_tokens": 300}))
    assert told == Usage(input_tokens=1000, output_tokens=300, cache_read_tokens=500, audio_tokens=300,
                         output_audio_tokens=200)
    # no breakdown (Azure): the cached part split as the input is, new-api's rule
    assert p.response_usage(usage()) == Usage(input_tokens=1000, output_tokens=300, cache_read_tokens=500,
                                              audio_tokens=300, output_audio_tokens=200)
    assert p.response_usage({"status": "failed"}) is None


def test_absurd_counts_are_not_believed() -> None:
    lying = {"usage": {"input_tokens": -5, "output_tokens": True, "input_token_details": {"audio_tokens": 2**40},
                       "output_token_details": {"audio_tokens": 10**9}}}
    assert p.response_usage(lying) == Usage()


def test_the_key_subprotocol_and_the_protocol_version() -> None:
    assert p.subprotocol_key(("realtime", "openai-insecure-api-key.sk-abc")) == "sk-abc"
    assert p.subprotocol_key(("realtime", "openai-insecure-api-key.")) is None
    assert p.wants_beta({"openai-beta": "realtime=v1"}, ())
    assert p.wants_beta({}, ("realtime", "openai-beta.realtime-v1"))
    assert not p.wants_beta({"openai-beta": "assistants=v2"}, ("realtime",))


class Exchange(SimpleNamespace):
    """What the bill needs of an exchange: its price, and reservations from a quota."""

    async def reserve(self, amount: int) -> Any:
        if amount > self.quota:
            raise GatewayError(403, "user quota is not enough", code="insufficient_user_quota")
        self.quota -= amount
        return SimpleNamespace(amount=amount, refunded=False)


def bill(quota: int = 10**12) -> SessionBill:
    return SessionBill(Exchange(price=PRICE, quota=quota), SimpleNamespace(amount=0), reserve_output=100)  # type: ignore[arg-type]


def test_the_reservation_covers_the_conversation_and_the_output_as_audio() -> None:
    b = bill()
    assert b.amount() == round(100 * 8 * 2 * 2)  # nothing said yet: the output budget, as audio
    second = base64.b64encode(b"\0" * p.PCM_BYTES_PER_SECOND).decode()
    b.client_event({"type": "input_audio_buffer.append", "audio": second})
    b.client_event({"type": "session.update", "session": {"instructions": "Be brief.", "max_output_tokens": 50}})
    b.client_event({"type": "conversation.item.create",
                    "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}})
    prompt = Usage(input_tokens=10 + 3 + 1, audio_tokens=10)  # a second of audio, instructions, "hi"
    assert b.prompt() == prompt
    # the text reserved at a token per byte (four times its estimate), the audio as it is
    assert b.amount() == usage_quota(PRICE, Usage(input_tokens=10 + 4 * 4, audio_tokens=10, output_tokens=50,
                                                  output_audio_tokens=50))


async def test_a_response_cut_off_is_billed_on_what_was_seen() -> None:
    b = bill()
    b.client_event({"type": "conversation.item.create",
                    "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x" * 40}]}})
    await b.response_created("resp_1")
    assert b.standing is None and "resp_1" in b.flights
    flight = b.flights["resp_1"]
    assert b.estimate(flight) == Usage()  # nothing came out: the read is not billed either
    b.delta("resp_1", False, 20)  # 20 characters of transcript
    b.delta("resp_1", True, len(base64.b64encode(b"\0" * 4800)))  # 0.1 s of PCM16 audio
    assert b.estimate(flight) == Usage(input_tokens=10, output_tokens=5 + 2, output_audio_tokens=2)
    b.delta("resp_unknown", False, 99)  # a response the bill does not know: ignored


async def test_a_quota_that_cannot_cover_the_next_response_says_so() -> None:
    b = bill(quota=100)
    b.standing = None
    with pytest.raises(GatewayError) as refused:
        await b.replenish()
    assert refused.value.code == "insufficient_user_quota"


async def test_a_response_the_quota_cannot_cover_is_tracked_on_an_empty_reservation() -> None:
    """Started by the upstream while another runs, it cannot be reserved for: the 403 is
    returned (the session ends) and the response is still tracked, so it is cancelled and billed."""
    b = bill(quota=100)
    assert await b.response_created("resp_1") is None  # the standing reservation
    refused = await b.response_created("resp_2")
    assert refused is not None and refused.code == "insufficient_user_quota"
    assert b.flights["resp_2"].reservation.amount == 0
    assert await b.response_created("resp_2") is None  # known now: nothing more asked
    assert await b.response_created("resp_3", fund=False) is None  # a session ending reserves nothing
    assert b.flights["resp_3"].reservation.amount == 0


async def test_a_response_create_is_paid_for_before_it_goes_and_bounded_when_unlimited() -> None:
    """The standing reservation pays for the first when it covers it; the next needs its own;
    one the quota cannot cover raises (it is not forwarded). A response that names no bound in
    a session without one goes with the model's; one that names its own, or inherits the
    session's number, goes as it came."""
    per_response = round(100 * 8 * 2 * 2)  # the output bound (100) as audio, nothing said yet
    b = SessionBill(Exchange(price=PRICE, quota=per_response), SimpleNamespace(amount=per_response),  # type: ignore[arg-type]
                    reserve_output=100)
    event = {"type": "response.create", "response": {"instructions": ""}}
    assert await b.fund_response(event) == {"type": "response.create",
                                            "response": {"instructions": "", "max_output_tokens": 100}}
    assert b.standing is None and len(b.prepaid) == 1
    own = {"type": "response.create", "response": {"max_output_tokens": 10}}
    assert await b.fund_response(own) is None  # its own bound: reserved as it is, sent as it came
    assert [r.amount for r in b.prepaid] == [per_response, round(10 * 8 * 2 * 2)]
    with pytest.raises(GatewayError):
        await b.fund_response({"type": "response.create", "response": {"max_output_tokens": "inf"}})
    assert await b.response_created("resp_1") is None
    assert b.flights["resp_1"].reservation.amount == per_response  # the first paid for, in turn


def test_a_session_left_unlimited_gets_the_models_bound() -> None:
    b = bill()
    update = {"type": "session.update", "session": {"type": "realtime", "max_output_tokens": "inf"}}
    b.client_event(update)
    assert b.bounded_session(update) == {"type": "session.update",
                                         "session": {"type": "realtime", "max_output_tokens": 100}}
    numbered = {"type": "session.update", "session": {"type": "realtime", "max_output_tokens": 64}}
    b.client_event(numbered)
    assert b.bounded_session(numbered) is None and b.max_output == 64
    beta = SessionBill(Exchange(price=PRICE, quota=1), SimpleNamespace(amount=0), reserve_output=100,  # type: ignore[arg-type]
                       beta=True)
    assert beta.bounded_session({"type": "session.update", "session": {}}) == {
        "type": "session.update", "session": {"max_response_output_tokens": 100}}
