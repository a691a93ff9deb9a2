"""new-api's passkey options and the relying party they describe: the RP id (a domain),
the origins a ceremony may come from and how much user verification is asked for. Without
``passkey.rp_id`` / ``passkey.origins`` they follow ``ServerAddress``, never the request's
Host header (which a client chooses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit

from pydantic import Field

from faregate.api import OptionSpec, Setting, option_parsers

if TYPE_CHECKING:
    from faregate.api import Services


def _origins(value: str) -> list[str]:
    origins = []
    for item in (part.strip().rstrip("/") for part in option_parsers.text(4096)(value).split(",")):
        if not item:
            continue
        parts = urlsplit(item)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
            raise ValueError(f"{item!r} is not an origin such as https://gate.example.com")
        origins.append(item)
    return origins


SETTINGS: tuple[Setting, ...] = (
    Setting("passkey_logins_per_ip", 20, "Passkey logins (POST /api/user/passkey/login/begin) one client IP may "
            "start per minute: each leaves a challenge row for 5 minutes.", Annotated[int, Field(ge=1, le=100_000)]),
)

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("passkey.enabled", "false", "Users may register passkeys and log in with them.",
               option_parsers.boolean),
    OptionSpec("passkey.rp_display_name", "", "The site's name shown by the authenticator (empty: SystemName).",
               option_parsers.text(128)),
    OptionSpec("passkey.rp_id", "", "The relying party id, a domain (empty: ServerAddress's host).",
               option_parsers.text(253)),
    OptionSpec("passkey.origins", "", "Origins ceremonies may come from, comma-separated (empty: ServerAddress's "
               "origin).", _origins),
    OptionSpec("passkey.allow_insecure_origin", "false", "Accept http:// origins other than localhost (testing only).",
               option_parsers.boolean),
    OptionSpec("passkey.user_verification", "preferred", "User verification asked of the authenticator.",
               option_parsers.choice("required", "preferred", "discouraged")),
    OptionSpec("passkey.attachment_preference", "", "platform, cross-platform or empty (either).",
               option_parsers.choice("", "platform", "cross-platform")),
)


class PasskeyConfigError(Exception):
    """Passkeys cannot be used as configured; the message says what to set."""


@dataclass(frozen=True, slots=True)
class RelyingParty:
    id: str
    name: str
    origins: list[str]
    user_verification: str
    attachment: str


def relying_party(services: Services) -> RelyingParty:
    options = services.options
    if not options.value("passkey.enabled"):
        raise PasskeyConfigError("passkey login is not enabled by the administrator")
    origins: list[str] = list(options.value("passkey.origins"))
    server = str(options.value("ServerAddress")).rstrip("/")
    if not origins and server:
        parts = urlsplit(server)
        origins = [f"{parts.scheme}://{parts.netloc}"]
    rp_id = str(options.value("passkey.rp_id")) or (urlsplit(origins[0]).hostname or "" if origins else "")
    if not origins or not rp_id:
        raise PasskeyConfigError("passkeys need ServerAddress (or passkey.rp_id and passkey.origins) to be set")
    if not options.value("passkey.allow_insecure_origin"):
        for origin in origins:
            parts = urlsplit(origin)
            if parts.scheme != "https" and parts.hostname not in ("localhost", "127.0.0.1", "::1"):
                raise PasskeyConfigError(f"the origin {origin} is not https (passkey.allow_insecure_origin is off)")
    name = str(options.value("passkey.rp_display_name")) or options.system_name
    return RelyingParty(id=rp_id, name=name, origins=origins,
                        user_verification=str(options.value("passkey.user_verification")),
                        attachment=str(options.value("passkey.attachment_preference")))
