"""The web console's browser fixtures (faregate_web.testing)."""

from faregate_web.testing import admin_page, browser, page, phone_page, upstream, web, web_artifacts

__all__ = ["admin_page", "browser", "page", "phone_page", "upstream", "web", "web_artifacts"]
