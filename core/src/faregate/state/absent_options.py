"""new-api's options for features Faregate does not have (issue 28): known, so new-api's
settings pages load and a listing shows them, read as new-api's default, and refused with
a 400 naming the missing feature when a write asks for anything else. Saying so beats
storing a value that silently changes nothing.

Where new-api's default switches a missing feature on (DrawingEnabled, TaskEnabled,
channel affinity, the performance monitor), the value here is off: that is what Faregate
does, and what keeps new-api's console from showing the feature's pages."""

from __future__ import annotations

from typing import Any

from faregate import jsonutil
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec, Parser, form_of

MIDJOURNEY = "Midjourney drawing"
TASKS = "async tasks (video, music, Suno)"
DEPLOYMENTS = "model deployments (io.net)"
WAFFO = "the Waffo payment gateway"
TURNSTILE = "Cloudflare Turnstile checks"
WORKER = "the image-fetching worker"
FILES = "file or image upload permissions"
STREAM_CACHE = "a stream cache queue"
AFFINITY = "channel affinity"
PERFORMANCE = "the disk cache or the performance monitor"
FETCH = ("per-site outbound fetch rules (its outbound guard is always on and refuses private addresses; "
         "channels: the channel_private_addresses setting)")
PING = "stream keep-alive pings"
FREE_PRE_CONSUME = "a switch for reserving quota on free models"
CLAUDE = "the Claude settings (per-model headers, default max tokens, thinking adapter)"
GEMINI = "the Gemini settings (safety, API versions, image models, thinking adapter)"
GLOBAL = "request pass-through, thinking blacklist or Chat-to-Responses conversion settings"
GROK = "Grok violation deductions"
QWEN = "a Qwen synchronous image model list"
STRIPE_PROMO = "Stripe promotion codes"
SMTP_LOGIN = "a forced SMTP AUTH LOGIN (its email plugin negotiates the method)"


class _Refused:
    """The option's own parser, then: anything but the default is refused naming ``feature``."""

    def __init__(self, parse: Parser, default: str, feature: str) -> None:
        self.parse, self.feature = parse, feature
        self.default_value: Any = parse(default)
        self.form = form_of(parse, default)

    def __call__(self, text: str) -> Any:
        value = self.parse(text)
        if value != self.default_value:
            raise ValueError(f"Faregate has no {self.feature}; only the default is accepted")
        return value


def missing_feature(spec: OptionSpec) -> str | None:
    """The feature ``spec`` is refused for, None for an option that works."""
    return spec.parse.feature if isinstance(spec.parse, _Refused) else None


def refused(key: str, default: str, parse: Parser, feature: str, about: str) -> OptionSpec:
    return OptionSpec(key, default, f"{about} Not supported: Faregate has no {feature}.",
                      _Refused(parse, default, feature))


def _json(text: str) -> Any:
    """Any JSON (the shapes of options nothing reads); empty is null."""
    if not text.strip():
        return None
    try:
        return jsonutil.loads(text)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected JSON") from None


JSON = specs.described(_json, "json")
FLAG = specs.boolean
TEXT = specs.text(65_536)
COUNT = specs.integer(0, 2**31 - 1)
AMOUNT = specs.number(0, 1e12)

IMAGINE_MODELS = ('["gemini-2.0-flash-exp-image-generation","gemini-2.0-flash-exp","gemini-3-pro-image-preview",'
                  '"gemini-2.5-flash-image","gemini-3.1-flash-image-preview"]')

ABSENT_OPTIONS: tuple[OptionSpec, ...] = (
    refused("DrawingEnabled", "false", FLAG, MIDJOURNEY, "Midjourney drawing (new-api's default: on)."),
    *(refused(key, "false", FLAG, MIDJOURNEY, about) for key, about in (
        ("MjNotifyEnabled", "Midjourney callbacks."), ("MjAccountFilterEnabled", "Midjourney account filter."),
        ("MjModeClearEnabled", "Clear Midjourney mode flags."), ("MjForwardUrlEnabled", "Forward Midjourney URLs."),
        ("MjActionCheckSuccessEnabled", "Check a Midjourney task succeeded before an action."))),
    refused("TaskEnabled", "false", FLAG, TASKS, "Async tasks (new-api's default: on)."),
    refused("model_deployment.ionet.enabled", "false", FLAG, DEPLOYMENTS, "io.net deployments."),
    refused("model_deployment.ionet.api_key", "", TEXT, DEPLOYMENTS, "The io.net API key."),
    refused("WaffoEnabled", "false", FLAG, WAFFO, "Waffo payments."),
    refused("WaffoSandbox", "false", FLAG, WAFFO, "Waffo's sandbox."),
    refused("WaffoUnitPrice", "1", AMOUNT, WAFFO, "Waffo's unit price."),
    refused("WaffoMinTopUp", "1", COUNT, WAFFO, "Waffo's smallest top-up."),
    refused("WaffoCurrency", "USD", TEXT, WAFFO, "Waffo's currency."),
    refused("WaffoPayMethods", "[]", JSON, WAFFO, "Waffo's payment methods."),
    *(refused(key, "", TEXT, WAFFO, f"Waffo's {about}.") for key, about in (
        ("WaffoApiKey", "API key"), ("WaffoPrivateKey", "private key"), ("WaffoPublicCert", "public certificate"),
        ("WaffoSandboxApiKey", "sandbox API key"), ("WaffoSandboxPrivateKey", "sandbox private key"),
        ("WaffoSandboxPublicCert", "sandbox public certificate"), ("WaffoMerchantId", "merchant id"),
        ("WaffoNotifyUrl", "notify URL"), ("WaffoReturnUrl", "return URL"),
        ("WaffoSubscriptionReturnUrl", "subscription return URL"))),
    refused("TurnstileCheckEnabled", "false", FLAG, TURNSTILE, "Ask for a Turnstile check at sign-up and login."),
    refused("TurnstileSiteKey", "", TEXT, TURNSTILE, "The Turnstile site key."),
    refused("TurnstileSecretKey", "", TEXT, TURNSTILE, "The Turnstile secret key."),
    refused("WorkerUrl", "", TEXT, WORKER, "A worker that fetches images for requests."),
    refused("WorkerValidKey", "", TEXT, WORKER, "The image worker's key."),
    refused("WorkerAllowHttpImageRequestEnabled", "false", FLAG, WORKER, "Let the worker fetch http images."),
    *(refused(key, "1", COUNT, FILES, f"Who may {about}.") for key, about in (
        ("FileUploadPermission", "upload files"), ("FileDownloadPermission", "download files"),
        ("ImageUploadPermission", "upload images"), ("ImageDownloadPermission", "download images"))),
    refused("StreamCacheQueueLength", "0", COUNT, STREAM_CACHE, "The stream cache queue's length."),
    refused("StripePromotionCodesEnabled", "false", FLAG, STRIPE_PROMO, "Stripe promotion codes at checkout."),
    refused("SMTPForceAuthLogin", "false", FLAG, SMTP_LOGIN, "Force SMTP AUTH LOGIN."),
    refused("channel_affinity_setting.enabled", "false", FLAG, AFFINITY,
            "Keep a conversation on one channel (new-api's default: on)."),
    refused("channel_affinity_setting.switch_on_success", "true", FLAG, AFFINITY, "Move the affinity on success."),
    refused("channel_affinity_setting.max_entries", "100000", COUNT, AFFINITY, "The most affinity entries."),
    refused("channel_affinity_setting.default_ttl_seconds", "3600", COUNT, AFFINITY, "An affinity's lifetime."),
    refused("channel_affinity_setting.rules", "[]", JSON, AFFINITY, "The affinity rules."),
    refused("performance_setting.disk_cache_enabled", "false", FLAG, PERFORMANCE, "Cache big bodies on disk."),
    refused("performance_setting.disk_cache_threshold_mb", "10", COUNT, PERFORMANCE, "The disk cache's threshold."),
    refused("performance_setting.disk_cache_max_size_mb", "1024", COUNT, PERFORMANCE, "The disk cache's size."),
    refused("performance_setting.disk_cache_path", "", TEXT, PERFORMANCE, "The disk cache's directory."),
    refused("performance_setting.monitor_enabled", "false", FLAG, PERFORMANCE,
            "Refuse requests under load (new-api's default: on)."),
    *(refused(f"performance_setting.monitor_{what}_threshold", default, COUNT, PERFORMANCE,
              f"The monitor's {what} threshold (%).") for what, default in (("cpu", "90"), ("memory", "90"),
                                                                           ("disk", "95"))),
    refused("fetch_setting.enable_ssrf_protection", "true", FLAG, FETCH, "Guard outbound fetches."),
    *(refused(f"fetch_setting.{key}", default, FLAG, FETCH, about) for key, default, about in (
        ("allow_private_ip", "false", "Fetch from private addresses."),
        ("domain_filter_mode", "false", "The domain list is an allow list."),
        ("ip_filter_mode", "false", "The IP list is an allow list."),
        ("apply_ip_filter_for_domain", "true", "Apply the IP list to domains."))),
    refused("fetch_setting.domain_list", "[]", JSON, FETCH, "Domains allowed or denied."),
    refused("fetch_setting.ip_list", "[]", JSON, FETCH, "Addresses allowed or denied."),
    refused("fetch_setting.allowed_ports", '["80","443","8080","8443"]', JSON, FETCH, "Ports fetched from."),
    refused("general_setting.ping_interval_enabled", "false", FLAG, PING, "Ping streaming clients."),
    refused("general_setting.ping_interval_seconds", "60", COUNT, PING, "Seconds between pings."),
    refused("quota_setting.enable_free_model_pre_consume", "true", FLAG, FREE_PRE_CONSUME,
            "Reserve quota for free models too."),
    refused("claude.model_headers_settings", "{}", JSON, CLAUDE, "Extra headers per Claude model."),
    refused("claude.default_max_tokens", '{"default":8192}', JSON, CLAUDE, "Claude's max tokens per model."),
    refused("claude.thinking_adapter_enabled", "true", FLAG, CLAUDE, "The -thinking model suffix."),
    refused("claude.thinking_adapter_budget_tokens_percentage", "0.8", specs.number(0, 1), CLAUDE,
            "The thinking budget's share of max tokens."),
    refused("gemini.safety_settings", '{"default":"OFF"}', JSON, GEMINI, "Gemini's safety thresholds."),
    refused("gemini.version_settings", '{"default":"v1beta","gemini-1.0-pro":"v1"}', JSON, GEMINI,
            "Gemini's API version per model."),
    # new-api's default list, as its settings export writes it (compact JSON): its models tab shows it
    refused("gemini.supported_imagine_models", IMAGINE_MODELS, JSON, GEMINI, "Gemini models that draw images."),
    refused("gemini.thinking_adapter_enabled", "false", FLAG, GEMINI, "The -thinking model suffix."),
    refused("gemini.thinking_adapter_budget_tokens_percentage", "0.6", specs.number(0, 1), GEMINI,
            "The thinking budget's share of max tokens."),
    refused("gemini.function_call_thought_signature_enabled", "true", FLAG, GEMINI, "Thought signatures."),
    refused("gemini.remove_function_response_id_enabled", "true", FLAG, GEMINI, "Drop function response ids."),
    refused("global.pass_through_request_enabled", "false", FLAG, GLOBAL, "Pass request bodies through as sent."),
    refused("global.thinking_model_blacklist", '["moonshotai/kimi-k2-thinking","kimi-k2-thinking"]', JSON, GLOBAL,
            "Models never given the thinking adapter."),
    refused("global.chat_completions_to_responses_policy", '{"enabled":false,"all_channels":true}', JSON, GLOBAL,
            "Send chat completions as Responses calls."),
    refused("grok.violation_deduction_enabled", "true", FLAG, GROK, "Charge Grok's violation fee."),
    refused("grok.violation_deduction_amount", "0.05", AMOUNT, GROK, "Grok's violation fee (US dollars)."),
    refused("qwen.sync_image_models", "[]", JSON, QWEN, "Qwen image models called synchronously."),
    refused("group_ratio_setting.group_ratio", "{}", JSON, "separate group ratio under this name (set GroupRatio)",
            "new-api's second name of GroupRatio."),
    refused("group_ratio_setting.group_group_ratio", "{}", JSON,
            "separate group-to-group ratio under this name (set GroupGroupRatio)",
            "new-api's second name of GroupGroupRatio."),
)
