"""What routes are given through Powertools' dependency injection (Depends): the caller's tenant and the
domain objects, from the API's wiring.

The wiring (Services, and ApiSettings for tenancy) belongs to the handler module: app.py keeps it in a
WiringSlot, built on first use, and puts that in the resolver's context for each request (WIRING); the
dependencies below read it through the Request. Handler modules stay apart this way even where one process hosts several (the local runtime's
execution environments), while the routers, which hold no state, are shared.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from typing import Annotated, Any, cast

from aws_lambda_powertools.event_handler import Depends, Request
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from tickwork.control.api_bodies import (
    DlqList,
    JobList,
    JobSpec,
    RedriveResult,
    RunList,
    WorkflowList,
    WorkflowRunList,
)
from tickwork.control.callers import Caller, RoleTags, attribution_of, caller_of
from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.control.run_searches import RunSearchFilters
from tickwork.control.workflow_service import WorkflowService
from tickwork.model.audit import Attribution
from tickwork.model.errors import AdminRequired
from tickwork.services import Services, ServicesSlot
from tickwork.settings import ApiSettings

WIRING = "tickwork_wiring"  # the key of the API's wiring in the resolver's context


class WiringSlot:
    """A handler module's wiring: built on first use (never at import, so moto can patch first) and kept for
    the life of the execution environment. Tests and the local runtime inject their Services; the API
    settings, unless given with them, are then read from the environment when first needed."""

    def __init__(self) -> None:
        self._services = ServicesSlot()
        self._settings: ApiSettings | None = None
        self._lock = threading.Lock()

    def services(self) -> Services:
        return self._services.get()

    def settings(self) -> ApiSettings:
        with self._lock:
            if self._settings is None:
                self._settings = ApiSettings.from_env()
            return self._settings

    def role_tags(self) -> RoleTags:
        """Where callers' roles' tenant tags are read, and kept (the services')."""
        return self.services().role_tags

    def set(self, services: Services | None, settings: ApiSettings | None = None) -> None:
        self._services.set(services)
        with self._lock:
            self._settings = settings


def wiring(request: Request) -> WiringSlot:
    return cast(WiringSlot, request.context[WIRING])


def services(slot: Annotated[WiringSlot, Depends(wiring)]) -> Services:
    return slot.services()


def job_lifecycle(built: Annotated[Services, Depends(services)]) -> JobLifecycle:
    return built.jobs


def workflows_of(built: Services) -> WorkflowService:
    """The workflows' service of the wiring."""
    return built.workflows


def caller(request: Request, slot: Annotated[WiringSlot, Depends(wiring)]) -> Caller:
    """The caller: its tenant and whether it is an admin (already checked before routing, so a refusal here
    is rare: a keys file edited in between)."""
    return caller_of(cast(APIGatewayProxyEventV2, request.resolved_event), slot.settings(), slot.role_tags())


def attribution(request: Request, slot: Annotated[WiringSlot, Depends(wiring)]) -> Attribution:
    """Who makes the request and from where: what a change's audit record names."""
    return attribution_of(cast(APIGatewayProxyEventV2, request.resolved_event), slot.settings(), slot.role_tags())


def tenant(who: Annotated[Caller, Depends(caller)]) -> str:
    """The caller's tenant."""
    return who.tenant


def admin(who: Annotated[Caller, Depends(caller)]) -> Caller:
    """The caller, who must be an admin (AdminRequired, a 403, otherwise)."""
    if not who.admin:
        raise AdminRequired()
    return who


Wired = Annotated[Services, Depends(services)]
Jobs = Annotated[JobLifecycle, Depends(job_lifecycle)]
Tenant = Annotated[str, Depends(tenant)]
Admin = Annotated[Caller, Depends(admin)]
Who = Annotated[Caller, Depends(caller)]
Acting = Annotated[Attribution, Depends(attribution)]


@dataclass(frozen=True)
class TenantJobs:
    """The calls that answer a page or a report, bound to the caller's tenant: listings, idempotent create
    and redrive, shaped into their response models."""

    services: Services
    caller: Caller
    tenant: str  # whose: the caller's own, or the one an admin's read names (`reading`)

    def reading(self, asked: str | None) -> TenantJobs:
        """The listings of the tenant a read's `tenant` parameter names (Caller.tenant_to_read)."""
        return replace(self, tenant=self.caller.tenant_to_read(asked))

    def create_once(self, spec: JobSpec, key: str, request_hash: str, by: Attribution) -> tuple[dict[str, Any], bool]:
        return self.services.idempotent_create.create_job_once(
            self.tenant, spec, key=key, request_hash=request_hash, by=by
        )

    def jobs_page(self, **filters: Any) -> JobList:
        page = self.services.queries.list_jobs(self.tenant, **filters)
        return JobList(items=page.items, next_cursor=page.next_cursor)

    def runs_page(self, job_id: str, **filters: Any) -> RunList:
        page = self.services.queries.list_runs(self.caller.tenant, job_id, admin=self.caller.admin, **filters)
        return RunList(items=page.items, next_cursor=page.next_cursor)

    def search_page(self, filters: RunSearchFilters, *, limit: int, cursor: str | None) -> RunList:
        page = self.services.run_searches.search(self.tenant, filters, limit=limit, cursor=cursor)
        return RunList(items=page.items, next_cursor=page.next_cursor)

    def dlq_page(self, *, limit: int, cursor: str | None) -> DlqList:
        page = self.services.redrive.dlq_page(self.tenant, limit=limit, cursor=cursor)
        return DlqList(items=page.items, next_cursor=page.next_cursor)

    def redrive(self, run_ids: list[str] | None, by: Attribution) -> RedriveResult:
        report = self.services.redrive.redrive(self.tenant, run_ids, by=by)
        return RedriveResult(
            redriven=report.redriven,
            run_ids=report.run_ids,
            not_redriven=report.not_redriven,
            more=report.more,
            refused=report.refused,
        )


def tenant_jobs(built: Wired, who: Who) -> TenantJobs:
    return TenantJobs(built, who, who.tenant)


CallerJobs = Annotated[TenantJobs, Depends(tenant_jobs)]


@dataclass(frozen=True)
class TenantWorkflows:
    """The caller's workflow listings, shaped into their response models."""

    services: Services
    caller: Caller
    tenant: str  # whose: the caller's own, or the one an admin's read names (`reading`)

    def reading(self, asked: str | None) -> TenantWorkflows:
        """The listings of the tenant a read's `tenant` parameter names (Caller.tenant_to_read)."""
        return replace(self, tenant=self.caller.tenant_to_read(asked))

    def workflows_page(self, **filters: Any) -> WorkflowList:
        page = workflows_of(self.services).list(self.tenant, **filters)
        return WorkflowList(items=[self.services.queries.shown(w) for w in page.items], next_cursor=page.next_cursor)

    def runs_page(self, workflow_id: str, **filters: Any) -> WorkflowRunList:
        page = workflows_of(self.services).runs(self.caller.tenant, workflow_id, admin=self.caller.admin, **filters)
        return WorkflowRunList(items=page.items, next_cursor=page.next_cursor)


def tenant_workflows(built: Wired, who: Who) -> TenantWorkflows:
    return TenantWorkflows(built, who, who.tenant)


CallerWorkflows = Annotated[TenantWorkflows, Depends(tenant_workflows)]
