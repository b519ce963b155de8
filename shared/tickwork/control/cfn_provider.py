"""The stack's CloudFormation custom resource provider: `Custom::TickworkJob`, `Custom::TickworkWorkflow` and
`Custom::TickworkCalendar` created, updated and deleted through the domain services the API calls, for the tenant
the resource's `Tenant` names (one of those the provider may act for: docs/security.md, "Jobs as CloudFormation
resources").

- **Create** makes the object once per request: CloudFormation, and Lambda's retries of an asynchronous invoke,
  deliver a request again with its RequestId, so the object's id is claimed first under a key of the stack, the
  logical id and the RequestId (an idempotency record, tickwork.store.idempotency), and a delivery that finds the
  key makes the object under the claimed id if it is not there yet, or answers it.
- **Update** is tickwork.control.cfn_properties.plan_update's: nothing, the API's PATCH (a calendar's PUT), or a
  replacement made as a create is (a new physical id: CloudFormation then deletes the old one).
- **Delete** cancels a job or workflow (one already COMPLETED is left so) and deletes a calendar; one already gone,
  or a physical id that names none (a create that failed answers one), is a success.
- **The answer** is SUCCESS with the object's id as the physical id and its attributes as Data, or FAILED with the
  API's message as Reason (its 422's detail, naming each field), sent by the handler to the pre-signed URL.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tickwork.control.calendars import CalendarService
from tickwork.control.cfn_properties import (
    ResourceKind,
    UpdatePlan,
    not_yet_made,
    patch_of,
    plan_update,
    properties_of,
    resource_kind,
    spec_of,
    tenant_of,
)
from tickwork.control.idempotent_create import KeyReused, request_hash
from tickwork.control.job_lifecycle import JobLifecycle
from tickwork.control.queries import JobQueries
from tickwork.control.workflow_service import WorkflowService
from tickwork.model.audit import Actor, ActorKind, Attribution
from tickwork.model.calendars import Calendar
from tickwork.model.clock import Clock, to_ms
from tickwork.model.errors import Conflict, Forbidden, InvalidInput, NotFound, TickworkError
from tickwork.model.ids import new_job_id
from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.model.workflow.definition import Workflow
from tickwork.observability import logger
from tickwork.store.codec import TENANT
from tickwork.store.idempotency import IdempotencyRecords

MAX_RESPONSE_BYTES = 4096  # CloudFormation's bound on a custom resource's response body
ANY_TENANT = "*"
NOT_CREATED = "tickwork-not-created-"  # a failed create's physical id: names no object, so its delete is a no-op

Made = Job | Workflow | Calendar


class CfnRequest(BaseModel):
    """A custom resource request, as CloudFormation sends it (only what the provider reads)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    request_type: Literal["Create", "Update", "Delete"] = Field(alias="RequestType")
    response_url: str = Field(alias="ResponseURL", min_length=1)
    stack_id: str = Field(alias="StackId", min_length=1, max_length=2048)
    request_id: str = Field(alias="RequestId", min_length=1, max_length=256)
    logical_resource_id: str = Field(alias="LogicalResourceId", min_length=1, max_length=256)
    resource_type: str = Field(alias="ResourceType")
    physical_resource_id: str | None = Field(default=None, alias="PhysicalResourceId", max_length=1024)
    properties: dict[str, Any] = Field(default_factory=dict, alias="ResourceProperties")
    old_properties: dict[str, Any] | None = Field(default=None, alias="OldResourceProperties")

    @property
    def stack_name(self) -> str:
        """arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid> -> <name>."""
        parts = self.stack_id.split("/")
        return parts[1] if len(parts) >= 3 else self.stack_id

    @property
    def attribution(self) -> Attribution:
        """What the audit records of its changes name: the stack and the resource's logical id."""
        display = f"{self.stack_name}/{self.logical_resource_id}"[:512]
        return Attribution(
            actor=Actor(kind=ActorKind.CLOUDFORMATION, id=self.stack_id, display=display),
            request_id=self.request_id,
        )

    @property
    def idempotency_key(self) -> str:
        """One key per resource and request: every delivery of the request has it, no other request does."""
        identity = "\n".join((self.stack_id, self.logical_resource_id, self.request_id))
        return "cfn:" + hashlib.sha256(identity.encode()).hexdigest()

    def answer(self, physical_id: str, data: dict[str, str]) -> CfnResponse:
        return CfnResponse(
            Status="SUCCESS",
            PhysicalResourceId=physical_id,
            StackId=self.stack_id,
            RequestId=self.request_id,
            LogicalResourceId=self.logical_resource_id,
            Data=data,
        )

    def refused(self, reason: str) -> CfnResponse:
        return CfnResponse(
            Status="FAILED",
            Reason=reason,
            PhysicalResourceId=self.physical_resource_id or NOT_CREATED + self.request_id,
            StackId=self.stack_id,
            RequestId=self.request_id,
            LogicalResourceId=self.logical_resource_id,
        )


class CfnResponse(BaseModel):
    """The body PUT to the request's ResponseURL (CloudFormation's field names)."""

    model_config = ConfigDict(frozen=True)

    Status: Literal["SUCCESS", "FAILED"]
    Reason: str | None = None
    PhysicalResourceId: str
    StackId: str
    RequestId: str
    LogicalResourceId: str
    NoEcho: bool = False
    Data: dict[str, str] = Field(default_factory=dict)

    def body(self) -> bytes:
        """The JSON body, within CloudFormation's 4096 bytes: a long Reason is cut to fit (it says so)."""
        raw = self.model_dump_json(exclude_none=True).encode()
        if len(raw) <= MAX_RESPONSE_BYTES or not self.Reason:
            return raw
        over = len(raw) - MAX_RESPONSE_BYTES
        cut = self.Reason.encode()[: max(0, len(self.Reason.encode()) - over - 40)].decode(errors="ignore")
        return self.model_copy(update={"Reason": cut + " ... (cut to fit)"}).model_dump_json(exclude_none=True).encode()


def reason_of(exc: Exception) -> str:
    """What a FAILED answer says: the API's message for what it refused (a 422's detail names each field)."""
    if isinstance(exc, ValidationError):
        exc = InvalidInput.from_validation(exc)
    return str(exc) or type(exc).__name__


def data_of(made: Made) -> dict[str, str]:
    """The attributes Fn::GetAtt reads: Id and Name, and a job's or workflow's State and NextRunAt ("" for none), a
    job's Type, a calendar's Mode."""
    data = {"Id": made.id, "Name": made.name}
    if isinstance(made, Calendar):
        return data | {"Mode": made.mode.value}
    next_run = made.next_run_at.isoformat().replace("+00:00", "Z") if made.next_run_at else ""
    data |= {"State": made.state.value, "NextRunAt": next_run}
    return data | ({"Type": made.type} if isinstance(made, Job) else {})


@dataclass(frozen=True)
class ResourceProvider:
    jobs: JobLifecycle
    queries: JobQueries
    workflows: WorkflowService
    calendars: CalendarService
    idempotency: IdempotencyRecords
    clock: Clock
    tenants: frozenset[str]  # whose objects it may make (the stack's ResourceProviderTenants); `*`: any tenant's

    def handle(self, request: CfnRequest) -> CfnResponse:
        """The answer to one request; a refusal is FAILED with the API's message, never an exception."""
        if request.request_type == "Delete" and request.resource_type not in set(ResourceKind):
            # Its create was refused for its type, so nothing was made: its rollback has nothing to do.
            return request.answer(request.physical_resource_id or NOT_CREATED + request.request_id, {})
        try:
            kind = resource_kind(request.resource_type)
            act = {"Create": self._create, "Update": self._update, "Delete": self._delete}[request.request_type]
            made = act(kind, request)
        except TickworkError as exc:
            logger.info("custom resource refused", extra={"request_type": request.request_type, "reason": str(exc)})
            return request.refused(reason_of(exc))
        if made is None:
            return request.answer(request.physical_resource_id or NOT_CREATED + request.request_id, {})
        return request.answer(made.id, data_of(made))

    # ------------------------------------------------------------ the requests

    def _create(self, kind: ResourceKind, request: CfnRequest) -> Made:
        tenant = self._tenant(request.properties)
        return self._create_once(kind, tenant, spec_of(kind, request.properties), request)

    def _update(self, kind: ResourceKind, request: CfnRequest) -> Made:
        tenant = self._tenant(request.properties)
        spec = spec_of(kind, request.properties)
        plan = plan_update(kind, request.old_properties or {}, tenant, spec)
        physical_id = request.physical_resource_id or ""
        if plan.action == "replace":
            plan = self._replan_on_live(kind, tenant, physical_id, spec, plan)
        logger.info("custom resource update", extra={"action": plan.action, "reason": plan.reason, "id": physical_id})
        if plan.action == "replace":
            return self._create_once(kind, tenant, spec, request)
        live = self._read(kind, tenant, physical_id)
        changes = not_yet_made(plan.changes, live)
        if not changes:
            return live
        by = request.attribution
        if kind is ResourceKind.CALENDAR:
            return self.calendars.replace(tenant, physical_id, spec, by=by)
        if kind is ResourceKind.JOB:
            return self.jobs.update(tenant, physical_id, patch_of(kind, changes), by=by)
        return self.workflows.update(tenant, physical_id, patch_of(kind, changes), by=by)

    def _delete(self, kind: ResourceKind, request: CfnRequest) -> None:
        physical_id = request.physical_resource_id or ""
        if not kind.id_pattern.match(physical_id):
            return  # nothing was made under it (a create that failed)
        tenant = self._tenant(request.properties)
        by = request.attribution
        try:
            if kind is ResourceKind.CALENDAR:
                self.calendars.delete(tenant, physical_id, by=by)
            elif self._read(kind, tenant, physical_id).state is not JobState.COMPLETED:  # type: ignore[union-attr]
                changes = self.jobs if kind is ResourceKind.JOB else self.workflows
                changes.cancel(tenant, physical_id, by=by)
        except NotFound:
            logger.info("custom resource already gone", extra={"id": physical_id})

    # ------------------------------------------------------------ helpers

    def _tenant(self, properties: dict[str, Any]) -> str:
        tenant = tenant_of(properties)
        if not TENANT.match(tenant):
            raise InvalidInput.one("Tenant", f"{tenant[:130]!r} is not a tenant name ({TENANT.pattern})")
        if ANY_TENANT not in self.tenants and tenant not in self.tenants:
            # Not naming those it may act for: the reason is in the stack's events, which its readers see.
            raise Forbidden(
                f"Tenant: this provider may not act for {tenant!r} (not one of the Tickwork stack's parameter "
                f"ResourceProviderTenants)"
            )
        return tenant

    def _replan_on_live(
        self, kind: ResourceKind, tenant: str, physical_id: str, spec: Any, plan: UpdatePlan
    ) -> UpdatePlan:
        """A replacement's plan made again against the object in the new properties' tenant, where it is there:
        the rollback of an update refused for its tenant or type finds the object as it was, to keep."""
        if not kind.id_pattern.match(physical_id):
            return plan
        try:
            live = self._read(kind, tenant, physical_id)
        except NotFound:
            return plan
        return plan_update(kind, properties_of(kind, tenant, live), tenant, spec)

    def _read(self, kind: ResourceKind, tenant: str, object_id: str) -> Made:
        if kind is ResourceKind.JOB:
            return self.queries.get_job(tenant, object_id)
        if kind is ResourceKind.WORKFLOW:
            return self.workflows.get(tenant, object_id)
        return self.calendars.get(tenant, object_id)

    def _create_once(self, kind: ResourceKind, tenant: str, spec: Any, request: CfnRequest) -> Made:
        """The object of the request's key: found, or made under the id claimed for the key."""
        key, digest = request.idempotency_key, request_hash(request.properties)
        now = self.clock.now()
        earlier = self.idempotency.find(tenant, key, now=now)
        if earlier is None:
            claimed = new_job_id(to_ms(now), prefix=kind.name[0].lower())  # type: ignore[arg-type]
            earlier = self.idempotency.claim(tenant, key, request_hash=digest, job_id=claimed, now=now)
            if earlier is None:
                return self._made(kind, tenant, spec, claimed, request.attribution)
        if earlier.request_hash != digest:  # pragma: no cover - a request's deliveries carry one body
            raise KeyReused(key)
        try:
            return self._read(kind, tenant, earlier.job_id)
        except NotFound:
            logger.info("a repeated delivery makes what the first claimed", extra={"id": earlier.job_id})
        return self._made(kind, tenant, spec, earlier.job_id, request.attribution)

    def _made(self, kind: ResourceKind, tenant: str, spec: Any, object_id: str, by: Attribution) -> Made:
        """The object made under its id; or, the id taken (by another delivery, or by the SDK's retry of a write
        that happened though its answer was lost), the one there."""
        try:
            return self._make(kind, tenant, spec, object_id, by)
        except Conflict as conflict:
            try:
                return self._read(kind, tenant, object_id)
            except NotFound:
                raise conflict from None

    def _make(self, kind: ResourceKind, tenant: str, spec: Any, object_id: str, by: Attribution) -> Made:
        if kind is ResourceKind.JOB:
            return self.jobs.create_job(tenant, spec, by=by, job_id=object_id)
        if kind is ResourceKind.WORKFLOW:
            return self.workflows.create(tenant, spec, by=by, workflow_id=object_id)
        return self.calendars.create(tenant, spec, by=by, calendar_id=object_id)
