"""The OAuth providers, as configurations of one protocol: where to send the user, how to
trade the code for a token (credentials in a JSON body, a form, or Basic auth), where the
user's profile is and which of its fields are the stable id, the name and a verified email.
Their options keep new-api's names; OIDC's endpoints come from the provider's discovery
document (``oidc.well_known``) or are set one by one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from faregate.api import OptionSpec, Setting, option_parsers

Credentials = Literal["json", "form", "basic"]


@dataclass(frozen=True, slots=True)
class Profile:
    """What a provider says about the user: ``subject`` is its stable id (never the email)."""

    subject: str
    username: str = ""
    display_name: str = ""
    email: str = ""  # only when the provider says it is verified
    trust_level: int | None = None


def _github(body: dict[str, Any]) -> Profile:
    # the numeric id is permanent; the login can be renamed (new-api keys on the id too)
    return Profile(subject=str(body.get("id") or ""), username=str(body.get("login") or ""),
                   display_name=str(body.get("name") or ""), email=str(body.get("email") or ""))


def _discord(body: dict[str, Any]) -> Profile:
    return Profile(subject=str(body.get("id") or ""), username=str(body.get("username") or ""),
                   display_name=str(body.get("global_name") or ""),
                   email=str(body.get("email") or "") if body.get("verified") is True else "")


def _linuxdo(body: dict[str, Any]) -> Profile:
    level = body.get("trust_level")
    return Profile(subject=str(body.get("id") or ""), username=str(body.get("username") or ""),
                   display_name=str(body.get("name") or ""),
                   trust_level=level if isinstance(level, int) and not isinstance(level, bool) else 0)


def _oidc(body: dict[str, Any]) -> Profile:
    return Profile(subject=str(body.get("sub") or ""), username=str(body.get("preferred_username") or ""),
                   display_name=str(body.get("name") or ""),
                   email=str(body.get("email") or "") if body.get("email_verified") is True else "")


@dataclass(frozen=True, slots=True)
class Provider:
    name: str  # the path segment: /api/oauth/<name>
    title: str
    enabled: str  # option keys
    client_id: str
    client_secret: str
    authorize_url: str  # official endpoints; a test base URL replaces their scheme and host
    token_url: str
    userinfo_url: str
    credentials: Credentials
    scope: str
    profile: Callable[[dict[str, Any]], Profile]
    #: the username prefix of accounts it creates (new-api's github_12)
    prefix: str


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("github", "GitHub", "GitHubOAuthEnabled", "GitHubClientId", "GitHubClientSecret",
             "https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token",
             "https://api.github.com/user", "json", "read:user user:email", _github, "github_"),
    Provider("discord", "Discord", "discord.enabled", "discord.client_id", "discord.client_secret",
             "https://discord.com/oauth2/authorize", "https://discord.com/api/oauth2/token",
             "https://discord.com/api/users/@me", "form", "identify email", _discord, "discord_"),
    Provider("linuxdo", "Linux DO", "LinuxDOOAuthEnabled", "LinuxDOClientId", "LinuxDOClientSecret",
             "https://connect.linux.do/oauth2/authorize", "https://connect.linux.do/oauth2/token",
             "https://connect.linux.do/api/user", "basic", "user", _linuxdo, "linuxdo_"),
    Provider("oidc", "OIDC", "oidc.enabled", "oidc.client_id", "oidc.client_secret",
             "", "", "", "form", "openid profile email", _oidc, "oidc_"),
)}


def _secret(key: str, description: str) -> OptionSpec:
    return OptionSpec(key, "", description, option_parsers.text(1024), secret=True)


def _url(value: str) -> str:
    value = option_parsers.text(2048)(value).strip()
    if value and not value.startswith(("https://", "http://")):
        raise ValueError("expected an http(s) URL")
    return value


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("GitHubOAuthEnabled", "false", "Log in with GitHub.", option_parsers.boolean),
    OptionSpec("GitHubClientId", "", "GitHub OAuth app client id.", option_parsers.text(255)),
    _secret("GitHubClientSecret", "GitHub OAuth app client secret."),
    OptionSpec("discord.enabled", "false", "Log in with Discord.", option_parsers.boolean),
    OptionSpec("discord.client_id", "", "Discord application client id.", option_parsers.text(255)),
    _secret("discord.client_secret", "Discord application client secret."),
    OptionSpec("LinuxDOOAuthEnabled", "false", "Log in with Linux DO.", option_parsers.boolean),
    OptionSpec("LinuxDOClientId", "", "Linux DO client id.", option_parsers.text(255)),
    _secret("LinuxDOClientSecret", "Linux DO client secret."),
    OptionSpec("LinuxDOMinimumTrustLevel", "0", "Lowest Linux DO trust level that may log in.",
               option_parsers.integer(0, 4)),
    OptionSpec("oidc.enabled", "false", "Log in with an OpenID Connect provider.", option_parsers.boolean),
    OptionSpec("oidc.client_id", "", "OIDC client id.", option_parsers.text(255)),
    _secret("oidc.client_secret", "OIDC client secret."),
    OptionSpec("oidc.well_known", "", "The provider's discovery document "
               "(https://issuer/.well-known/openid-configuration); sets the endpoints below.", _url),
    OptionSpec("oidc.authorization_endpoint", "", "OIDC authorization endpoint (without a discovery document).",
               _url),
    OptionSpec("oidc.token_endpoint", "", "OIDC token endpoint (without a discovery document).", _url),
    OptionSpec("oidc.user_info_endpoint", "", "OIDC userinfo endpoint (without a discovery document).", _url),
)

SETTINGS: tuple[Setting, ...] = (
    Setting("oauth_private_addresses", "deny", "Whether the OAuth and OIDC endpoints may be loopback or private "
            "addresses (a self-hosted identity provider): allow or deny. Metadata and link-local addresses never.",
            Literal["allow", "deny"]),
    *(Setting(f"oauth_{name}_base_url", "", f"Another scheme and host for {name}'s official endpoints (a "
              "test double or a proxy); empty: the official ones.") for name in ("github", "discord", "linuxdo")),
    Setting("oauth_starts_per_ip", 20, "OAuth flows (GET /api/oauth/state, /api/oauth/<provider>/authorize) one "
            "client IP may start per minute: each leaves a state row for 10 minutes.",
            Annotated[int, Field(ge=1, le=100_000)]),
)
