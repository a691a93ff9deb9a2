"""Every HTML page the gateway serves carries a Content-Security-Policy with
``frame-ancestors``, and the headers that go with it. A page that sets its own policy (the
web console, ``/api/docs``) keeps it; any other HTML answer (a plugin's page, a redirect's
empty body, an error page a library renders) gets :data:`BASELINE`: no script, no style, no
framing, nothing loaded. So a page added later that forgets its policy runs nothing rather
than whatever it was given, and cannot be framed (clickjacking)."""

from __future__ import annotations

from collections.abc import MutableMapping

from quart import Response
from werkzeug.datastructures import Headers

#: the policy of an HTML answer that declares none: it may show text, nothing more
BASELINE = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


def page_headers(csp: str) -> dict[str, str]:
    """The headers of a page under ``csp``: no framing, no MIME sniffing, no referrer."""
    return {
        "Content-Security-Policy": csp,
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


def apply_baseline(response: Response) -> None:
    """After the view (:mod:`faregate.edge.steps`): the baseline on an HTML answer without a policy."""
    add_baseline(response.headers.get("Content-Type", ""), response.headers)


def add_baseline(content_type: str, headers: MutableMapping[str, str] | Headers) -> None:
    """The baseline headers an answer of ``content_type`` lacks, when it is HTML (one test for
    every other answer: the relay's JSON and streams)."""
    if content_type.startswith("text/html"):
        for name, value in page_headers(BASELINE).items():
            headers.setdefault(name, value)
