"""The options that only shape what new-api's web console shows (issue 28): the chat-app
links, the top-up and docs links, the dashboard's API info, announcements and FAQ panels,
the sidebar and header modules. Nothing in a request reads them; ``GET /api/status`` sends
them to the console (``faregate.management.status``), which stores and shows them.

The sidebar's default hides the pages of features Faregate does not have (Midjourney
drawing, async tasks, model deployments, subscriptions), so the console never shows a page
whose API answers 404; a write that turns one on is refused naming the feature."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from faregate import jsonutil
from faregate.net.urls import url_form_problem
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

#: (section, module) of new-api's sidebar whose page Faregate does not serve, and what is missing
ABSENT_SIDEBAR_MODULES: dict[tuple[str, str], str] = {
    ("console", "midjourney"): "Midjourney drawing",
    ("console", "task"): "async tasks",
    ("admin", "deployment"): "model deployments",
    ("admin", "subscription"): "subscriptions",
}
#: new-api's sidebar sections and modules (web/src/hooks/common/useSidebar.js, DEFAULT_ADMIN_CONFIG)
SIDEBAR_SECTIONS: dict[str, tuple[str, ...]] = {
    "chat": ("playground", "chat"),
    "console": ("detail", "token", "log", "midjourney", "task"),
    "personal": ("topup", "personal"),
    "admin": ("channel", "models", "deployment", "redemption", "user", "subscription", "setting"),
}
HEADER_MODULES = ("home", "console", "pricing", "docs", "about")
ANNOUNCEMENT_TYPES = ("default", "ongoing", "success", "warning", "error")


def _json_array(value: str, what: str, most: int) -> list[Any]:
    if not value.strip():
        return []
    try:
        items = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError(f"expected a JSON array of {what}") from None
    if not isinstance(items, list) or len(items) > most:
        raise ValueError(f"expected a JSON array of at most {most} {what}")
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ValueError(f"{what} {n}: expected an object")
    return items


def _field(item: dict[str, Any], n: int, name: str, most: int, *, required: bool = True) -> str:
    value = item.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value) or len(value) > most:
        raise ValueError(f"item {n}: {name} must be {'1' if required else '0'} to {most} characters")
    return value


def _api_info(value: str) -> list[dict[str, Any]]:
    """The dashboard's API addresses: ``[{url, route, description, color}]``, at most 50."""
    items = _json_array(value, "API addresses", 50)
    for n, item in enumerate(items, 1):
        url = _field(item, n, "url", 500)
        problem = url_form_problem(url, query=True)
        if problem is not None:
            raise ValueError(f"item {n}: the url {problem}")
        _field(item, n, "route", 100)
        _field(item, n, "description", 200)
        _field(item, n, "color", 32)
    return items


def _announcements(value: str) -> list[dict[str, Any]]:
    """``[{content, publishDate (RFC 3339), type?, extra?}]``, at most 100."""
    items = _json_array(value, "announcements", 100)
    for n, item in enumerate(items, 1):
        _field(item, n, "content", 500)
        try:
            datetime.fromisoformat(_field(item, n, "publishDate", 64))
        except ValueError:
            raise ValueError(f"item {n}: publishDate must be an RFC 3339 time") from None
        kind = item.get("type")
        if kind is not None and kind not in ANNOUNCEMENT_TYPES:
            raise ValueError(f"item {n}: type must be one of {', '.join(ANNOUNCEMENT_TYPES)}")
        _field(item, n, "extra", 200, required=False)
    return items


def _faq(value: str) -> list[dict[str, Any]]:
    """``[{question, answer}]``, at most 100."""
    items = _json_array(value, "questions", 100)
    for n, item in enumerate(items, 1):
        _field(item, n, "question", 200)
        _field(item, n, "answer", 1000)
    return items


def _chats(value: str) -> list[dict[str, str]]:
    """new-api's ``Chats``: ``[{"app name": "link template"}]`` (the key page's "open in"
    menu; ``{key}`` and ``{address}`` are filled in by the console), at most 100."""
    items = _json_array(value, "chat links", 100)
    for n, item in enumerate(items, 1):
        if len(item) != 1:
            raise ValueError(f"item {n}: expected one name and its link")
        for name, link in item.items():
            if not 1 <= len(name) <= 100 or not isinstance(link, str) or not 1 <= len(link) <= 2048:
                raise ValueError(f"item {n}: the name must be 1 to 100 characters, the link 1 to 2048")
    return items


def _sidebar_modules(value: str) -> dict[str, dict[str, bool]]:
    """``{section: {enabled, module: bool}}``; the modules of missing features are off (also
    when left out: the console shows a module it is not told about)."""
    parsed = jsonutil.loads(value) if value.strip() else {}
    if not isinstance(parsed, dict):
        raise ValueError("expected a JSON object of sections")
    out: dict[str, dict[str, bool]] = {}
    for section, modules in parsed.items():
        if section not in SIDEBAR_SECTIONS or not isinstance(modules, dict):
            raise ValueError(f"unknown section {str(section)[:40]!r} (known: {', '.join(SIDEBAR_SECTIONS)})")
        for module, on in modules.items():
            if module != "enabled" and module not in SIDEBAR_SECTIONS[section] or not isinstance(on, bool):
                raise ValueError(f"{section}.{str(module)[:40]}: expected a known module and true or false")
            missing = ABSENT_SIDEBAR_MODULES.get((section, module))
            if on and missing is not None:
                raise ValueError(f"{section}.{module} cannot be shown: Faregate has no {missing}")
        out[section] = dict(modules)
    for (section, module) in ABSENT_SIDEBAR_MODULES:
        out.setdefault(section, {})[module] = False
    return out


def _parse_sidebar(value: str) -> dict[str, dict[str, bool]]:
    try:
        return _sidebar_modules(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON object of sections") from None


def _header_modules(value: str) -> dict[str, Any]:
    """``{home, console, docs, about: bool, pricing: {enabled, requireAuth}}`` (or empty: all shown)."""
    if not value.strip():
        return {}
    try:
        parsed = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON object of modules") from None
    if not isinstance(parsed, dict):
        raise ValueError("expected a JSON object of modules")
    for module, on in parsed.items():
        if module not in HEADER_MODULES:
            raise ValueError(f"unknown module {str(module)[:40]!r} (known: {', '.join(HEADER_MODULES)})")
        if module == "pricing" and isinstance(on, dict):
            if not all(k in ("enabled", "requireAuth") and isinstance(v, bool) for k, v in on.items()):
                raise ValueError("pricing: expected {enabled, requireAuth} as true or false")
        elif not isinstance(on, bool):
            raise ValueError(f"{module}: expected true or false")
    return parsed


def _link(value: str) -> str:
    """An http(s) link shown to users, or empty (none)."""
    value = specs.text(2048)(value).strip()
    problem = url_form_problem(value, query=True) if value else None
    if problem is not None:
        raise ValueError(f"the link {problem}")
    return value


#: what new-api's console stores when an admin first saves the sidebar (every page of a missing feature off)
DEFAULT_SIDEBAR = jsonutil.dumps_str({
    section: {"enabled": True, **{module: (section, module) not in ABSENT_SIDEBAR_MODULES for module in modules}}
    for section, modules in SIDEBAR_SECTIONS.items()})

CONSOLE_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("Chats", "[]", "The key page's \"open in\" chat apps: a JSON array of {\"name\": \"link\"}, the "
               "console filling {key} and {address} into each link.", specs.described(_chats, "json")),
    OptionSpec("TopUpLink", "", "A link to buy redemption codes, shown on the wallet page (empty: none).",
               specs.described(_link, "text", max_length=2048)),
    OptionSpec("general_setting.docs_link", "", "The header's Docs link (empty: no Docs link).",
               specs.described(_link, "text", max_length=2048)),
    OptionSpec("DefaultCollapseSidebar", "false", "The console's sidebar starts collapsed.", specs.boolean),
    OptionSpec("DataExportDefaultTime", "hour", "The dashboard's default time granularity: hour, day or week.",
               specs.choice("hour", "day", "week")),
    OptionSpec("HeaderNavModules", "", "The header's links new-api's console shows: a JSON object of home, "
               "console, docs, about (true or false) and pricing ({enabled, requireAuth}); empty: all.",
               specs.described(_header_modules, "json")),
    OptionSpec("SidebarModulesAdmin", DEFAULT_SIDEBAR,
               "The sidebar pages new-api's console may show, by section ({section: {enabled, page: bool}}); "
               "the pages of features Faregate does not have (Midjourney, tasks, deployments, subscriptions) "
               "are always off.", specs.described(_parse_sidebar, "json")),
    OptionSpec("console_setting.api_info", "", "The dashboard's API addresses panel: a JSON array of "
               "{url, route, description, color}.", specs.described(_api_info, "json")),
    OptionSpec("console_setting.announcements", "", "The dashboard's announcements: a JSON array of "
               "{content, publishDate, type, extra}.", specs.described(_announcements, "json")),
    OptionSpec("console_setting.faq", "", "The dashboard's FAQ: a JSON array of {question, answer}.",
               specs.described(_faq, "json")),
    OptionSpec("console_setting.api_info_enabled", "true", "Show the dashboard's API addresses panel.",
               specs.boolean),
    OptionSpec("console_setting.announcements_enabled", "true", "Show the dashboard's announcements panel.",
               specs.boolean),
    OptionSpec("console_setting.faq_enabled", "true", "Show the dashboard's FAQ panel.", specs.boolean),
    OptionSpec("console_setting.uptime_kuma_enabled", "true", "Show the dashboard's service status panel "
               "(console_setting.uptime_kuma_groups).", specs.boolean),
    OptionSpec("legal.user_agreement", "", "User agreement (Markdown, HTML or a URL), new-api's name; "
               "/api/user-agreement serves it, else UserAgreement.", specs.text(262_144)),
    OptionSpec("legal.privacy_policy", "", "Privacy policy (Markdown, HTML or a URL), new-api's name; "
               "/api/privacy-policy serves it, else PrivacyPolicy.", specs.text(262_144)),
)
