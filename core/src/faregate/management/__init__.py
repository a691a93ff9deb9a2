"""The management API under ``/api``, with new-api's contracts: the
``{success, message, data}`` envelope, ``p``/``page_size`` paging, the session cookie
plus ``New-Api-User`` header, or the access token."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from quart import Quart

    from faregate.management.host import ManagementHost


def register_management(app: Quart, gateway: ManagementHost) -> None:
    from faregate.management import (
        bindings,
        channel_affinity,
        channel_bulk,
        channel_keys,
        channel_models,
        channel_probe,
        channel_reveal,
        channels,
        checkins,
        custom_oauth,
        dashboard,
        invitations,
        logs,
        model_meta,
        performance,
        prefill_groups,
        redemptions,
        sign_in,
        site,
        status,
        subscriptions,
        system,
        task_lists,
        tokens,
        top_ups,
        uptime,
        user_admin,
        user_factors,
        user_self,
        users,
        vendors,
        verification,
    )

    # top-ups (/api/user/topup/..., each payment provider's paths) before /api/user/<id> too
    top_ups.install(app, gateway)
    # the users' fixed paths (/api/user/self, /search) before the blueprint with /api/user/<id>
    for module in (system, status, site, uptime, dashboard, verification, sign_in, bindings, user_self, checkins,
                   invitations, user_factors, user_admin, users, channel_keys, channel_reveal, channel_bulk,
                   channel_models, channel_probe, channels, tokens, logs, redemptions, vendors, model_meta,
                   prefill_groups, subscriptions, custom_oauth, task_lists, performance, channel_affinity):
        app.register_blueprint(module.blueprint)
