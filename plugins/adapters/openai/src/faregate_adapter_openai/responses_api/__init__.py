"""OpenAI's Responses API through the gateway: ``POST /v1/responses`` on every channel type
and ``POST /v1/responses/compact`` on the channels that serve it.

A channel whose provider serves ``responses`` natively (OpenAI and the OpenAI-compatible
types) gets the client's body as it is (the model mapped) and its answer goes back
unchanged; any other chat channel (a chat-only OpenAI-compatible vendor, Anthropic, …) gets
the request converted through the canonical model, and its answer is rendered as a
Response object or the Responses event stream.

* :mod:`.summary`: reading a request (checks, what it needs, the prompt estimate);
* :mod:`.requests`: a Responses body → the canonical ``ChatRequest``;
* :mod:`.render`: a canonical ``ChatResponse`` → a Response object; usage both ways;
* :mod:`.stream`: canonical stream events → the Responses event sequence;
* :mod:`.native`: the pass-through to channels that serve the endpoint natively;
* :mod:`.format`, :mod:`.driver`: the inbound format ``openai.responses`` and its driver;
* :mod:`.compact`: ``/v1/responses/compact`` (native channels only), priced as new-api does.
"""
