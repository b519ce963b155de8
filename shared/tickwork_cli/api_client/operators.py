"""The typed client's operator reads and admin settings: who the caller is, tenants' settings and usage, the audit
trail, the scheduler's metrics, the band queues' dead letters and their redrive, the regions' roles and a failover,
the API's health and its OpenAPI document."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tickwork.control.api_bodies import AuditList, CallerView, Health, TenantView
from tickwork.control.dead_letters import DeadLetterQueueList, DeadLetterRedriveRequest, DeadLetterRedriveResult
from tickwork.control.metrics_bodies import Catalogue, MetricsBody
from tickwork.control.region_failover import FailoverRequest, FailoverResult, RegionStatus
from tickwork.model.audit import AuditRecord
from tickwork.model.tenant_settings import TenantSettings

from tickwork_cli.api_client.exchange import Listing, Part, segment

OPERATIONS = {
    ("GET", "/v1/me"): "me",
    ("GET", "/v1/tenants/me"): "my_tenant",
    ("GET", "/v1/tenants/{tenant}"): "get_tenant",
    ("PUT", "/v1/tenants/{tenant}"): "set_tenant",
    ("GET", "/v1/audit"): "audit",
    ("GET", "/v1/metrics"): "metrics",
    ("GET", "/v1/metrics/catalogue"): "metrics_catalogue",
    ("GET", "/v1/dead-letters"): "dead_letters",
    ("POST", "/v1/dead-letters/redrive"): "redrive_dead_letters",
    ("GET", "/v1/regions"): "region_status",
    ("POST", "/v1/regions/failover"): "fail_over",
    ("GET", "/v1/health"): "health",
    ("GET", "/v1/openapi.json"): "openapi",
}


class Operators(Part):
    def me(self) -> CallerView:
        """The caller's tenant, and whether it is an admin."""
        return self._exchange.one(CallerView, "GET", "/v1/me")

    def my_tenant(self) -> TenantView:
        return self._exchange.one(TenantView, "GET", "/v1/tenants/me")

    def get_tenant(self, tenant: str) -> TenantView:
        """A tenant's settings (the defaults where none are set) and usage; another tenant's is an admin's."""
        return self._exchange.one(TenantView, "GET", f"/v1/tenants/{segment(tenant)}")

    def set_tenant(self, tenant: str, settings: TenantSettings | Mapping[str, Any]) -> TenantSettings:
        """Replace a tenant's settings whole (an admin's): a setting left out is unset."""
        return self._exchange.one(TenantSettings, "PUT", f"/v1/tenants/{segment(tenant)}", body=settings)

    def audit(
        self,
        *,
        resource: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        from_: datetime | str | None = None,
        to: datetime | str | None = None,
        tenant: str | None = None,
        page_size: int | None = None,
    ) -> Listing[AuditList, AuditRecord]:
        """Who changed what through the API, newest first."""
        query = {"resource": resource, "actor": actor, "action": action, "from": from_, "to": to, "tenant": tenant}
        return Listing(self._exchange, AuditList, "/v1/audit", query, page_size)

    def metrics(
        self,
        *,
        names: str | None = None,
        period: int | None = None,
        start: datetime | str | None = None,
        end: datetime | str | None = None,
        band: str | None = None,
        tenant: str | None = None,
    ) -> MetricsBody:
        """The scheduler's figures as time series (`names`: comma-separated catalogue names; absent, all)."""
        query = {"names": names, "period": period, "start": start, "end": end, "band": band, "tenant": tenant}
        return self._exchange.one(MetricsBody, "GET", "/v1/metrics", query=query)

    def metrics_catalogue(self) -> Catalogue:
        return self._exchange.one(Catalogue, "GET", "/v1/metrics/catalogue")

    def dead_letters(self) -> DeadLetterQueueList:
        """How many messages each band's SQS dead-letter queue holds, and its latest redrive (an admin's)."""
        return self._exchange.one(DeadLetterQueueList, "GET", "/v1/dead-letters")

    def redrive_dead_letters(self, request: DeadLetterRedriveRequest | Mapping[str, Any]) -> DeadLetterRedriveResult:
        return self._exchange.one(DeadLetterRedriveResult, "POST", "/v1/dead-letters/redrive", body=request)

    def region_status(self) -> RegionStatus:
        """This region, the mode, and the active region and epoch its replica holds (docs/regions.md)."""
        return self._exchange.one(RegionStatus, "GET", "/v1/regions")

    def fail_over(self, request: FailoverRequest | Mapping[str, Any]) -> FailoverResult:
        """Make `to` the active region under the next epoch; a 409 while replication has not caught up, unless
        `force` (docs/regions.md)."""
        return self._exchange.one(FailoverResult, "POST", "/v1/regions/failover", body=request)

    def health(self) -> Health:
        return self._exchange.one(Health, "GET", "/v1/health")

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document."""
        document: dict[str, Any] = self._exchange.call("GET", "/v1/openapi.json")
        return document
