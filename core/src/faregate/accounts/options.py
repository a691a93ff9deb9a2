"""The options of accounts and sign-in the core reads (new-api's names): who may register and
the quota a new user starts with, whether passwords log in, which email addresses are
accepted, invitation rewards, the daily check-in."""

from __future__ import annotations

import re

from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

#: the most quota one check-in may give (new-api's field is a Go int; this keeps a day's gift sane)
MAX_CHECKIN_AWARD = 10**12
_DOMAIN = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+")


def domain_list(value: str) -> list[str]:
    """new-api's ``EmailDomainWhitelist``: domains separated by commas (or lines)."""
    domains = [d.strip().lower() for d in specs.text(8192)(value).replace("\n", ",").split(",") if d.strip()]
    for domain in domains:
        if not _DOMAIN.fullmatch(domain):
            raise ValueError(f"{domain!r} is not a domain name")
    return domains


ACCOUNT_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("QuotaForNewUser", "0", "Quota a new user starts with.", specs.integer(0, 10**15)),
    OptionSpec("RegisterEnabled", "true", "New users may sign up (by password, OAuth or any other method).",
               specs.boolean),
    OptionSpec("PasswordRegisterEnabled", "true", "New users may sign up with a username and password.",
               specs.boolean),
    OptionSpec("PasswordLoginEnabled", "true", "Users may log in with their password.", specs.boolean),
    OptionSpec("EmailVerificationEnabled", "false", "Sign-up needs a code sent to the email address "
               "(the faregate-auth-email plugin sends it).", specs.boolean),
    OptionSpec("EmailDomainRestrictionEnabled", "false", "Only addresses of EmailDomainWhitelist may sign up "
               "or be bound.", specs.boolean),
    OptionSpec("EmailDomainWhitelist", "gmail.com,outlook.com,qq.com,163.com,yahoo.com",
               "Email domains accepted when EmailDomainRestrictionEnabled is on, comma-separated.", domain_list),
    OptionSpec("EmailAliasRestrictionEnabled", "false", "Refuse addresses whose local part has '+' or '.' "
               "(aliases of one mailbox).", specs.boolean),
    OptionSpec("QuotaForInvitee", "0", "Quota a user who signs up with an invitation code gets on top.",
               specs.integer(0, 10**15)),
    OptionSpec("QuotaForInviter", "0", "Invitation quota (aff_quota) the inviter earns per sign-up.",
               specs.integer(0, 10**15)),
    # new-api's daily check-in (faregate.accounts.checkin), its defaults
    OptionSpec("checkin_setting.enabled", "false", "Users may check in once a day for a random quota gift.",
               specs.boolean),
    OptionSpec("checkin_setting.min_quota", "1000", "The least quota one check-in gives.",
               specs.integer(0, MAX_CHECKIN_AWARD)),
    OptionSpec("checkin_setting.max_quota", "10000", "The most quota one check-in gives (below min_quota: "
               "min_quota).", specs.integer(0, MAX_CHECKIN_AWARD)),
)
