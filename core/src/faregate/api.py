"""The plugin API: the one module a Faregate plugin imports (tests may also import
:mod:`faregate.testing`). Everything here is stable within a minor version of the
``faregate`` distribution; anything else in the core may change without notice, and
``tests/test_plugin_api.py`` fails when a plugin imports it.

What is here, by concept:

* hooks: :data:`hookimpl` (see :mod:`faregate.hookspecs` and docs/plugin-hooks.md);
* the canonical chat model and stream events (:mod:`faregate.canonical`);
* what plugins register: formats, providers, endpoint drivers, policy objects,
  storage backends, plugin tables (:mod:`faregate.contracts`);
* the exchange: inbound requests, outcomes, operations, the per-request
  :class:`Exchange` policy objects receive; :func:`stream_outcome` relays an
  operation's streamed answer as chat does (fail-over before the first byte, settled
  however it ends); :class:`ChatOperation` / :class:`ChatDriver` relay a conversation
  endpoint that some providers serve natively (a :class:`NativeEndpoint`) and the rest
  through the canonical model; :func:`map_model` follows a channel's model mapping;
* errors, principals, prices (:func:`matching_name`: the name new-api finds a model's
  price under), log entries, reservations (a session's own, from
  :meth:`Exchange.reserve`), settings, the :class:`Services` door;
* upstream WebSockets (:class:`WebSocketHandshake`, :class:`UpstreamWebSocket`): what an
  operation whose request has method ``WEBSOCKET`` gets back (realtime sessions);
* the upstream client (:class:`UpstreamClient`, ``services.upstream``) for a channel's calls
  outside the relay, connecting only to addresses the channel address policy allows
  (:class:`UpstreamAddressRefused` otherwise);
* the adapter kit: :class:`HttpJsonProvider`, URL joining, stream framings, the token
  estimator, JSON, :func:`probe_body` (a channel test's body of each kind); exact token
  counting (:class:`TokenCounter` / :class:`Tokenizer`, what
  ``register_token_counters`` hands over; :func:`exact_counting`, which makes the estimator
  count text with a tokenizer; :func:`offer_exact_recount`, with which a driver lets its
  request's bill be recounted exactly when the upstream reports no usage;
  :func:`prepare_exact_recount`, which counts what such a bill needs before it settles, off the
  event loop when big; :func:`settle_on_prompt`, which settles a usage-less answer whose bill
  is its prompt alone);
* ``multipart/form-data`` bodies (:class:`Form`, :class:`FilePart`; read with
  :meth:`Exchange.read_form`);
* fetching URLs the gateway is given (image URLs, webhooks): :class:`GuardedFetcher`,
  which refuses loopback, private, link-local and cloud metadata addresses
  (:class:`BlockedAddress`);
* accounts and sign-in (``services.accounts``, :class:`Accounts`): making users, ending a
  login, revoking sessions, outside identities, one-time secrets, throttling guesses;
* notifying users (``register_notifiers``): :class:`Notifier` delivers a
  :class:`Notification` to a :class:`NotifyTarget` (raising :class:`NotifyError`);
* payments (``register_payment_providers``): the :class:`PaymentProvider` contract and what passes
  through it (:class:`PaymentRoutes`, :class:`PaymentAsk`, :class:`Quote`, :class:`TopUpOrder`,
  :class:`Checkout`, :class:`Webhook`, :class:`PaymentEvent`, :class:`PaymentRefused`,
  :class:`WebhookRejected`, the usual not-set-up check :func:`unset_problem`), the top-up price
  rule (:func:`quote_top_up`, money in minor units), and top-up orders completed exactly once
  (:func:`create_top_up`, :func:`complete_top_up`, :func:`expire_top_up`; the core's routes call them);
* management routes a plugin adds (``register_routes``) in the management API's manner:
  the envelope (:func:`ok`, :func:`fail`), access levels (:func:`public`, :func:`require`
  with ``ROLE_USER`` / ``ROLE_ADMIN`` / ``ROLE_ROOT``, :func:`require_session` for a route a
  browser reaches by a redirect, :func:`secure_verified`), declared
  bodies and answers (:class:`Body`, :class:`Shape`, :class:`Ok`, :class:`Done`); an app-wide
  request hook that has nothing to do on a relay route says so with :func:`skip_on_relay`
  (any other keeps the relay's routes on Quart's slower path, see :mod:`faregate.edge.direct_relay`).
"""

from __future__ import annotations

import typing as _typing

# the names are imported when first asked for (PEP 562, below): a plugin loaded only to declare
# its settings (`faregate config show`) need not import Quart, tortoise and the relay; these
# imports are what type checkers, import-linter and readers see, and tests/test_plugin_api.py
# checks that they and _WHERE name the same objects
if _typing.TYPE_CHECKING:
    from faregate import __version__, hookimpl
    from faregate.accounts.notify import Notification, Notifier, NotifyError, NotifyTarget
    from faregate.accounts.service import EMAIL_VERIFICATION, Account, OneTimeSecret, SignupError
    from faregate.billing.ledger import LogEntry, Reservation
    from faregate.billing.pending import UsageRecorder
    from faregate.billing.pricing import Price, prompt_bound, usage_quota
    from faregate.billing.ratios import matching_name
    from faregate.bounds import INT64_MAX, INT64_MIN, NumberBound, check_numbers
    from faregate.canonical import (
        ChatRequest,
        ChatResponse,
        ContentPart,
        ImagePart,
        Message,
        Reasoning,
        ReasoningDelta,
        ReasoningPart,
        Role,
        StopReason,
        StreamError,
        StreamEvent,
        StreamStart,
        StreamStop,
        TextDelta,
        TextPart,
        Tool,
        ToolCallDelta,
        ToolCallPart,
        ToolChoice,
        ToolResultPart,
        Usage,
        UsageEvent,
    )
    from faregate.contracts import (
        WEBSOCKET,
        Authenticator,
        AuthRequest,
        BalanceFetch,
        ChannelProbe,
        InboundFormat,
        ModelInfo,
        PassthroughStream,
        PaymentProvider,
        Provider,
        RequestSummary,
        Route,
        SecondFactor,
        StreamEncoder,
        StreamParser,
        TokenCount,
        UpstreamRequest,
        UpstreamTarget,
    )
    from faregate.contracts.inbound import InboundRequest, Outcome, WebSocketPeer
    from faregate.contracts.payments import (
        Checkout,
        Payer,
        PaymentAsk,
        PaymentEvent,
        PaymentRefused,
        PaymentRoutes,
        Quote,
        TopUpOrder,
        Webhook,
        WebhookRejected,
        unset_problem,
    )
    from faregate.db.backend import DbModels, StorageBackend  # also in faregate.contracts, which imports more
    from faregate.db.models import ROLE_ADMIN, ROLE_ROOT, ROLE_USER
    from faregate.edge.direct_relay import skip_on_relay
    from faregate.errors import ErrorKind, GatewayError, RateLimitInfo, bad_request, error_kind, upstream_error
    from faregate.exchange.attempts import AttemptFailed, Operation
    from faregate.exchange.chat import ChatDriver, ChatOperation, NativeEndpoint, stream_outcome
    from faregate.exchange.exchange import MAX_OUTPUT_TOKENS, REQUEST_ID_HEADER, Exchange
    from faregate.exchange.policies import (
        ChannelFilter,
        ChannelSelector,
        EndpointDriver,
        Pricer,
        QuotaCheck,
        RequestRewriter,
    )
    from faregate.exchange.recount import offer_exact_recount, settle_on_prompt
    from faregate.exchange.recount import prepare as prepare_exact_recount
    from faregate.exchange.routing import map_model
    from faregate.framing import Framing, FramingError, parse_sse_event, splitter_for, sse_bytes
    from faregate.jsonutil import JSONDecodeError
    from faregate.jsonutil import dumps as json_dumps
    from faregate.jsonutil import dumps_str as json_dumps_str
    from faregate.jsonutil import loads as json_loads
    from faregate.kit import HttpJsonProvider, join_url, malformed_response
    from faregate.management.accounts_door import Accounts
    from faregate.management.channel_test_kinds import probe_body
    from faregate.management.common import BadInput, fail, guarded, ok, public, require, require_session
    from faregate.management.openapi import Body, Done, Ok, Shape
    from faregate.management.verification import secure_verified
    from faregate.multipart import FilePart, Form, is_multipart
    from faregate.net import AddressCategory, BlockedAddress, Fetched, FetchError, GuardedFetcher
    from faregate.observe.report import ExchangeReport
    from faregate.payments.money import from_minor_units, minor_unit, parse_money, quote_top_up, to_minor_units
    from faregate.payments.orders import Completion, TopUpOutcome, complete_top_up, create_top_up, expire_top_up
    from faregate.principals import Principal, TokenEntry, UserEntry, bearer_token
    from faregate.services import Balance, Services
    from faregate.settings import Setting, Settings
    from faregate.state import option_specs as option_parsers
    from faregate.state.option_specs import OptionSpec
    from faregate.state.snapshot import ChannelEntry
    from faregate.tokens import TokenCounter, TokenEstimator, Tokenizer, estimator, exact_counting
    from faregate.upstream import (
        UpstreamAddressRefused,
        UpstreamClient,
        UpstreamResponse,
        UpstreamTransportError,
        UpstreamWebSocket,
        WebSocketHandshake,
    )

__all__ = [
    "EMAIL_VERIFICATION",
    "ROLE_ADMIN",
    "ROLE_ROOT",
    "ROLE_USER",
    "Account",
    "Accounts",
    "BadInput",
    "Body",
    "Done",
    "Ok",
    "OneTimeSecret",
    "Shape",
    "SignupError",
    "fail",
    "guarded",
    "ok",
    "public",
    "require",
    "require_session",
    "skip_on_relay",
    "secure_verified",
    "Checkout",
    "Completion",
    "Payer",
    "PaymentAsk",
    "PaymentEvent",
    "PaymentRefused",
    "PaymentRoutes",
    "Quote",
    "RateLimitInfo",
    "TopUpOrder",
    "TopUpOutcome",
    "Webhook",
    "WebhookRejected",
    "complete_top_up",
    "create_top_up",
    "expire_top_up",
    "from_minor_units",
    "minor_unit",
    "parse_money",
    "quote_top_up",
    "to_minor_units",
    "unset_problem",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_OUTPUT_TOKENS",
    "NumberBound",
    "check_numbers",
    "REQUEST_ID_HEADER",
    "WEBSOCKET",
    "AddressCategory",
    "AttemptFailed",
    "AuthRequest",
    "Authenticator",
    "Balance",
    "BalanceFetch",
    "BlockedAddress",
    "ChannelEntry",
    "ChannelFilter",
    "ChannelProbe",
    "ChannelSelector",
    "ChatDriver",
    "ChatOperation",
    "ChatRequest",
    "ChatResponse",
    "ContentPart",
    "DbModels",
    "EndpointDriver",
    "ErrorKind",
    "Exchange",
    "ExchangeReport",
    "FetchError",
    "Fetched",
    "FilePart",
    "Form",
    "Framing",
    "FramingError",
    "GatewayError",
    "GuardedFetcher",
    "HttpJsonProvider",
    "ImagePart",
    "InboundFormat",
    "InboundRequest",
    "JSONDecodeError",
    "LogEntry",
    "Message",
    "NativeEndpoint",
    "Notification",
    "Notifier",
    "NotifyError",
    "NotifyTarget",
    "ModelInfo",
    "Operation",
    "OptionSpec",
    "Outcome",
    "PassthroughStream",
    "PaymentProvider",
    "Price",
    "Pricer",
    "Principal",
    "Provider",
    "QuotaCheck",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningPart",
    "RequestRewriter",
    "RequestSummary",
    "Reservation",
    "Role",
    "Route",
    "SecondFactor",
    "Services",
    "Setting",
    "Settings",
    "StopReason",
    "StorageBackend",
    "StreamEncoder",
    "StreamError",
    "StreamEvent",
    "StreamParser",
    "StreamStart",
    "StreamStop",
    "TextDelta",
    "TextPart",
    "TokenCount",
    "TokenCounter",
    "TokenEntry",
    "TokenEstimator",
    "Tokenizer",
    "Tool",
    "ToolCallDelta",
    "ToolCallPart",
    "ToolChoice",
    "ToolResultPart",
    "UpstreamAddressRefused",
    "UpstreamClient",
    "UpstreamRequest",
    "UpstreamResponse",
    "UpstreamTarget",
    "UpstreamTransportError",
    "UpstreamWebSocket",
    "Usage",
    "UsageEvent",
    "UsageRecorder",
    "UserEntry",
    "WebSocketHandshake",
    "WebSocketPeer",
    "__version__",
    "bad_request",
    "bearer_token",
    "error_kind",
    "estimator",
    "exact_counting",
    "hookimpl",
    "is_multipart",
    "join_url",
    "json_dumps",
    "json_dumps_str",
    "json_loads",
    "option_parsers",
    "malformed_response",
    "map_model",
    "matching_name",
    "offer_exact_recount",
    "parse_sse_event",
    "prepare_exact_recount",
    "probe_body",
    "prompt_bound",
    "settle_on_prompt",
    "splitter_for",
    "sse_bytes",
    "stream_outcome",
    "upstream_error",
    "usage_quota",
]

#: the module each name comes from (the imports above, for the running program)
_SOURCES: dict[str, tuple[str, ...]] = {
    "faregate": ("__version__", "hookimpl"),
    "faregate.accounts.notify": ("Notification", "Notifier", "NotifyError", "NotifyTarget"),
    "faregate.accounts.service": ("EMAIL_VERIFICATION", "Account", "OneTimeSecret", "SignupError"),
    "faregate.billing.ledger": ("LogEntry", "Reservation"),
    "faregate.billing.pending": ("UsageRecorder",),
    "faregate.billing.pricing": ("Price", "prompt_bound", "usage_quota"),
    "faregate.billing.ratios": ("matching_name",),
    "faregate.bounds": ("INT64_MAX", "INT64_MIN", "NumberBound", "check_numbers"),
    "faregate.canonical": ("ChatRequest", "ChatResponse", "ContentPart", "ImagePart", "Message", "Reasoning",
        "ReasoningDelta", "ReasoningPart", "Role", "StopReason", "StreamError", "StreamEvent", "StreamStart",
        "StreamStop", "TextDelta", "TextPart", "Tool", "ToolCallDelta", "ToolCallPart", "ToolChoice",
        "ToolResultPart", "Usage", "UsageEvent"),
    "faregate.contracts": ("WEBSOCKET", "Authenticator", "AuthRequest", "BalanceFetch", "ChannelProbe",
        "InboundFormat", "ModelInfo", "PassthroughStream", "PaymentProvider", "Provider",
        "RequestSummary", "Route", "SecondFactor", "StreamEncoder", "StreamParser",
        "TokenCount", "UpstreamRequest", "UpstreamTarget"),
    "faregate.contracts.inbound": ("InboundRequest", "Outcome", "WebSocketPeer"),
    "faregate.contracts.payments": ("Checkout", "Payer", "PaymentAsk", "PaymentEvent", "PaymentRefused",
        "PaymentRoutes", "Quote", "TopUpOrder", "Webhook", "WebhookRejected", "unset_problem"),
    "faregate.db.backend": ("DbModels", "StorageBackend"),
    "faregate.db.models": ("ROLE_ADMIN", "ROLE_ROOT", "ROLE_USER"),
    "faregate.errors": ("ErrorKind", "GatewayError", "RateLimitInfo", "bad_request", "error_kind",
        "upstream_error"),
    "faregate.exchange.attempts": ("AttemptFailed", "Operation"),
    "faregate.exchange.chat": ("ChatDriver", "ChatOperation", "NativeEndpoint", "stream_outcome"),
    "faregate.exchange.exchange": ("MAX_OUTPUT_TOKENS", "REQUEST_ID_HEADER", "Exchange"),
    "faregate.exchange.policies": ("ChannelFilter", "ChannelSelector", "EndpointDriver", "Pricer",
        "QuotaCheck", "RequestRewriter"),
    "faregate.exchange.recount": ("offer_exact_recount", "settle_on_prompt"),
    "faregate.exchange.routing": ("map_model",),
    "faregate.framing": ("Framing", "FramingError", "parse_sse_event", "splitter_for", "sse_bytes"),
    "faregate.jsonutil": ("JSONDecodeError",),
    "faregate.kit": ("HttpJsonProvider", "join_url", "malformed_response"),
    "faregate.edge.direct_relay": ("skip_on_relay",),
    "faregate.management.accounts_door": ("Accounts",),
    "faregate.management.channel_test_kinds": ("probe_body",),
    "faregate.management.common": ("BadInput", "fail", "guarded", "ok", "public", "require", "require_session"),
    "faregate.management.openapi": ("Body", "Done", "Ok", "Shape"),
    "faregate.management.verification": ("secure_verified",),
    "faregate.multipart": ("FilePart", "Form", "is_multipart"),
    "faregate.net": ("AddressCategory", "BlockedAddress", "Fetched", "FetchError", "GuardedFetcher"),
    "faregate.observe.report": ("ExchangeReport",),
    "faregate.payments.money": ("from_minor_units", "minor_unit", "parse_money", "quote_top_up",
        "to_minor_units"),
    "faregate.payments.orders": ("Completion", "TopUpOutcome", "complete_top_up", "create_top_up",
        "expire_top_up"),
    "faregate.principals": ("Principal", "TokenEntry", "UserEntry", "bearer_token"),
    "faregate.services": ("Balance", "Services"),
    "faregate.settings": ("Setting", "Settings"),
    "faregate.state.option_specs": ("OptionSpec",),
    "faregate.state.snapshot": ("ChannelEntry",),
    "faregate.tokens": ("TokenCounter", "TokenEstimator", "Tokenizer", "estimator", "exact_counting"),
    "faregate.upstream": ("UpstreamAddressRefused", "UpstreamClient", "UpstreamResponse",
        "UpstreamTransportError", "UpstreamWebSocket", "WebSocketHandshake"),
}
#: names the API gives under another name: ``name: (module, attribute)``; no attribute: the module
_RENAMED: dict[str, tuple[str, str]] = {
    "prepare_exact_recount": ("faregate.exchange.recount", "prepare"),
    "json_dumps": ("faregate.jsonutil", "dumps"),
    "json_dumps_str": ("faregate.jsonutil", "dumps_str"),
    "json_loads": ("faregate.jsonutil", "loads"),
    "option_parsers": ("faregate.state.option_specs", ""),
}
_WHERE: dict[str, tuple[str, str]] = {
    **{name: (module, name) for module, names in _SOURCES.items() for name in names},
    **_RENAMED,
}

if not _typing.TYPE_CHECKING:  # type checkers see the imports above, and no catch-all attribute

    def __getattr__(name: str) -> object:
        """One name of the API, imported on first use and kept (PEP 562)."""
        try:
            module_name, attribute = _WHERE[name]
        except KeyError:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        import importlib

        module = importlib.import_module(module_name)
        value = getattr(module, attribute) if attribute else module
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})
