"""new-api's models settings tab (issue 28) shows the claude.*, gemini.*, global.* and grok.*
options as they are listed and validates them on save (JSON text areas, numbers in range,
switches). Faregate has none of these features, so each option is read as new-api's default:
the listed text must be exactly what new-api's settings export writes for its default
(compact JSON with Go's key order, Go's float and bool text), or the page shows values new-api
never would and a save sends them back as changes."""

from __future__ import annotations

from faregate.testing.harness import AdminClient

NEWAPI_DEFAULTS = {
    "claude.model_headers_settings": "{}",
    "claude.default_max_tokens": '{"default":8192}',
    "claude.thinking_adapter_enabled": "true",
    "claude.thinking_adapter_budget_tokens_percentage": "0.8",
    "gemini.safety_settings": '{"default":"OFF"}',
    "gemini.version_settings": '{"default":"v1beta","gemini-1.0-pro":"v1"}',
    "gemini.supported_imagine_models": '["gemini-2.0-flash-exp-image-generation","gemini-2.0-flash-exp",'
                                       '"gemini-3-pro-image-preview","gemini-2.5-flash-image",'
                                       '"gemini-3.1-flash-image-preview"]',
    "gemini.thinking_adapter_enabled": "false",
    "gemini.thinking_adapter_budget_tokens_percentage": "0.6",
    "gemini.function_call_thought_signature_enabled": "true",
    "gemini.remove_function_response_id_enabled": "true",
    "global.pass_through_request_enabled": "false",
    "global.thinking_model_blacklist": '["moonshotai/kimi-k2-thinking","kimi-k2-thinking"]',
    "global.chat_completions_to_responses_policy": '{"enabled":false,"all_channels":true}',
    "grok.violation_deduction_enabled": "true",
    "grok.violation_deduction_amount": "0.05",
}


async def test_the_models_tab_options_list_new_api_s_exact_defaults(admin: AdminClient) -> None:
    listed = {item["key"]: item["value"] for item in await admin.ok("GET", "/api/option/")}
    assert {key: listed.get(key) for key in NEWAPI_DEFAULTS} == NEWAPI_DEFAULTS


async def test_the_gemini_image_models_the_page_sends_back_pretty_printed_are_taken(admin: AdminClient) -> None:
    """The page re-indents JSON options before showing them; saving the unchanged list is accepted."""
    pretty = ('[\n  "gemini-2.0-flash-exp-image-generation",\n  "gemini-2.0-flash-exp",\n'
              '  "gemini-3-pro-image-preview",\n  "gemini-2.5-flash-image",\n  "gemini-3.1-flash-image-preview"\n]')
    assert (await admin.call("PUT", "/api/option/", json={"key": "gemini.supported_imagine_models",
                                                          "value": pretty}))["success"] is True
    refused = await admin.call("PUT", "/api/option/", json={"key": "gemini.supported_imagine_models", "value": "[]"})
    assert refused["success"] is False
