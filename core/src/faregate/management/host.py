"""What the management API sees of the running gateway: the exchange's view
(:class:`~faregate.exchange.host.ExchangeHost`) and the parts only management reads.

:class:`faregate.gateway.Gateway` satisfies :class:`ManagementHost` structurally, so the
HTTP layer names this view and never imports the assembly layer above it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from faregate.exchange.host import ExchangeHost

if TYPE_CHECKING:
    from faregate.billing.quota_warnings import QuotaWarnings
    from faregate.contracts import Authenticator, PaymentProvider, Provider, SecondFactor, StorageBackend
    from faregate.management.accounts_door import Accounts
    from faregate.management.site_options import SiteOptions
    from faregate.net import AddressPolicy
    from faregate.principals import TokenEntry
    from faregate.state.option_specs import OptionRegistry
    from faregate.state.snapshot import Snapshot


class ServicesView(Protocol):
    """The plugins' door (:class:`faregate.services.Services`), as far as management uses it."""

    @property
    def accounts(self) -> Accounts: ...
    def token_for_key(self, key: str) -> TokenEntry | None: ...


class PluginReportView(Protocol):
    """One plugin's load report (:class:`faregate.plugins.PluginReport`)."""

    def as_dict(self) -> dict[str, Any]: ...


class PluginsView(Protocol):
    """The loaded plugin set (:class:`faregate.plugins.PluginSet`): what was loaded, how."""

    @property
    def reports(self) -> Sequence[PluginReportView]: ...


class ManagementHost(ExchangeHost, Protocol):
    """The parts of one worker's gateway the management API uses."""

    @property
    def snapshot(self) -> Snapshot[SiteOptions]: ...
    @property
    def services(self) -> ServicesView: ...
    @property
    def plugins(self) -> PluginsView: ...
    @property
    def backend(self) -> StorageBackend: ...
    @property
    def option_registry(self) -> OptionRegistry: ...
    @property
    def quota_warnings(self) -> QuotaWarnings: ...
    @property
    def channel_addresses(self) -> AddressPolicy: ...
    @property
    def provider_list(self) -> Sequence[Provider]: ...
    @property
    def payment_providers(self) -> Mapping[str, PaymentProvider]: ...
    @property
    def second_factors(self) -> Mapping[str, SecondFactor]: ...
    @property
    def management_authenticators(self) -> list[Authenticator]: ...


class GatewayApp(Protocol):
    """The worker's Quart app (:class:`faregate.app.FaregateApp`), which carries its gateway."""

    @property
    def faregate(self) -> ManagementHost: ...
