"""A user's notification URLs (issue 17: the webhook of quota warnings, and bark / gotify)
whose host is a loopback, private, link-local or cloud metadata address (in any spelling) or
name are a 400 naming the field on save, nothing stored. The tests share one gateway: each
refused save leaves the root's settings as they were."""

from __future__ import annotations

import pytest

from faregate.db import models as m
from faregate.testing.harness import AdminClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

GOOD = {"notify_type": "webhook", "quota_warning_threshold": 1000, "webhook_url": "https://hooks.example/q"}


@pytest.mark.parametrize("field", ["webhook_url", "bark_url", "gotify_url"])
@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8080/hook", "http://localhost/hook", "http://[::1]/hook", "http://0x7f.1/hook",
    "http://2130706433/hook", "http://10.0.0.5/hook", "http://192.168.1.1/hook", "http://169.254.169.254/latest",
    "http://metadata.google.internal/computeMetadata/v1/", "http://[::ffff:127.0.0.1]/hook", "http://0.0.0.0/",
    "ftp://hooks.example/q", "http://user:pw@hooks.example/q", "http:///nohost",
])
async def test_inside_addresses_are_refused_on_save(module_admin: AdminClient, field: str, url: str) -> None:
    admin = module_admin
    before = (await m.User.get(id=admin.user_id)).setting
    resp = await admin.http.put("/api/user/setting", json={**GOOD, field: url, "gotify_token": "t"},
                                headers={"New-Api-User": str(admin.user_id)})
    assert resp.status_code == 400 and field in resp.json()["message"], resp.text
    assert (await m.User.get(id=admin.user_id)).setting == before
