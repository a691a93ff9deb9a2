"""The emails' words (HTML, with the site's name and the values escaped)."""

from __future__ import annotations

from html import escape

#: how long a sign-up code and a reset link live (new-api: VerificationValidMinutes = 10)
CODE_MINUTES = 10
RESET_MINUTES = 15


def code_mail(site: str, code: str) -> tuple[str, str]:
    return (f"{site}: your verification code",
            f"<p>Your {escape(site)} verification code is <strong>{escape(code)}</strong>.</p>"
            f"<p>It is valid for {CODE_MINUTES} minutes. If you did not ask for it, ignore this email.</p>")


def reset_mail(site: str, link: str) -> tuple[str, str]:
    safe = escape(link, quote=True)
    return (f"{site}: reset your password",
            f"<p>Someone asked to reset the password of your {escape(site)} account.</p>"
            f'<p><a href="{safe}">Reset the password</a> (or open {safe}).</p>'
            f"<p>The link is valid for {RESET_MINUTES} minutes and works once. "
            "If you did not ask for it, ignore this email: your password stays as it is.</p>")


def taken_mail(site: str) -> tuple[str, str]:
    """Sent instead of a code to an address that already has an account: the request's
    answer is the same either way, and the owner learns what happened."""
    return (f"{site}: this address already has an account",
            f"<p>Someone asked for a {escape(site)} sign-up code for this address, but it already has an "
            "account. Log in with it, or reset its password if you forgot it.</p>"
            "<p>If you did not ask, ignore this email: nothing was changed.</p>")
