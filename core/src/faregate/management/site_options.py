"""The site's options (new-api's names): its name, address, pages and notices, the ratio and
model-metadata sync, the Uptime Kuma status pages; and :class:`SiteOptions`, the options as
the HTTP layer and plugins read them (``services.options``): every typed attribute of the
layers below, and the site's name.

The gateway's option registry collects :data:`SITE_OPTIONS` with the other owners' (see
``docs/architecture.md``, "Options"). Lower layers that need one of these (the quota warning's
link to ``ServerAddress``) read it by name, ``options.value(key)``, never by importing this."""

from __future__ import annotations

import re

from faregate import jsonutil
from faregate.exchange.options import RelayOptions
from faregate.net.urls import url_form_problem
from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionRegistry, OptionSpec

_SLUG = re.compile(r"[A-Za-z0-9_-]{1,100}")


def _http_url(max_len: int) -> specs.Parser:
    """An http(s) URL with a host and no credentials, query or fragment: a place the gateway
    fetches from (through the guarded fetcher, which checks the address at each fetch)."""
    def parse(value: str) -> str:
        value = value.strip()
        if not value or len(value) > max_len:
            raise ValueError(f"expected an http(s) URL of at most {max_len} characters")
        problem = url_form_problem(value)
        if problem is not None:
            raise ValueError(f"the URL {problem}")
        return value.rstrip("/")
    return parse


def _uptime_kuma_groups(value: str) -> list[dict[str, str]]:
    """new-api's ``console_setting.uptime_kuma_groups``: a JSON array of at most 20
    ``{categoryName, url, slug, description}``, category names unique."""
    if not value.strip():
        return []
    try:
        items = jsonutil.loads(value)
    except jsonutil.JSONDecodeError:
        raise ValueError("expected a JSON array of groups") from None
    if not isinstance(items, list) or len(items) > 20:
        raise ValueError("expected a JSON array of at most 20 groups")
    base_url = _http_url(500)
    groups: list[dict[str, str]] = []
    for n, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise ValueError(f"group {n}: expected an object")
        name, slug, url, about = (item.get(k) for k in ("categoryName", "slug", "url", "description"))
        if not isinstance(name, str) or not 1 <= len(name) <= 50 or any(g["categoryName"] == name for g in groups):
            raise ValueError(f"group {n}: categoryName must be 1 to 50 characters and unique")
        if not isinstance(slug, str) or not _SLUG.fullmatch(slug):
            raise ValueError(f"group {n}: slug must be 1 to 100 letters, digits, _ or -")
        if not isinstance(about, str | None) or len(about or "") > 200:
            raise ValueError(f"group {n}: description must be a string of at most 200 characters")
        try:
            link = base_url(url if isinstance(url, str) else "")
        except ValueError as exc:
            raise ValueError(f"group {n}: url: {exc}") from None
        groups.append({"categoryName": name, "url": link, "slug": slug, "description": about or ""})
    return groups


SITE_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("DemoSiteEnabled", "false", "Demo site mode.", specs.boolean),
    OptionSpec("SystemName", "Faregate", "The site's name.", specs.text(128)),
    OptionSpec("Notice", "", "Notice shown to users (Markdown).", specs.text(65_536)),
    OptionSpec("About", "", "About page (Markdown or a URL).", specs.text(65_536)),
    OptionSpec("HomePageContent", "", "Home page (Markdown or a URL).", specs.text(65_536)),
    OptionSpec("Footer", "", "Page footer (HTML).", specs.text(65_536)),
    OptionSpec("Logo", "", "Logo URL.", specs.text(2048)),
    OptionSpec("UserAgreement", "", "User agreement (Markdown or a URL).", specs.text(262_144)),
    OptionSpec("PrivacyPolicy", "", "Privacy policy (Markdown or a URL).", specs.text(262_144)),
    OptionSpec("ExposeRatioEnabled", "false", "Publish the price ratios at /api/ratio_config (for ratio sync).",
               specs.boolean),
    OptionSpec("ServerAddress", "", "The gateway's public address.", specs.text(2048)),
    OptionSpec("SyncUpstreamBase", "https://basellm.github.io/llm-metadata",
               "Model metadata sync reads {this}/api/newapi/models.json and vendors.json "
               "(new-api's SYNC_UPSTREAM_BASE).", _http_url(512)),
    OptionSpec("console_setting.uptime_kuma_groups", "",
               "Uptime Kuma status pages proxied at /api/uptime/status: a JSON array of "
               "{categoryName, url, slug, description}.", specs.described(_uptime_kuma_groups, "json")),
)


class SiteOptions(RelayOptions):
    """The options as the HTTP layer and plugins read them: the typed attributes of every
    layer below, and the site's name."""

    def __init__(self, raw: dict[str, str], registry: OptionRegistry) -> None:
        super().__init__(raw, registry)
        self.system_name: str = self.values["SystemName"]
