"""State changes of anything scheduled (a job or a workflow) under optimistic locking: pause, resume, cancel and
updates, each a conditional replace on the version read, so two callers never lose each other's change."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from tickwork.control.audit import AuditTrail
from tickwork.model.audit import Attribution, AuditResource
from tickwork.model.clock import Clock
from tickwork.model.errors import Conflict, InvalidInput
from tickwork.model.job import Job
from tickwork.model.states import JobState
from tickwork.model.workflow.definition import Workflow

VERSION_RETRIES = 5

Scheduled = TypeVar("Scheduled", Job, Workflow)
Checked_contra = TypeVar("Checked_contra", Job, Workflow, contravariant=True)


class Checks(Protocol[Checked_contra]):
    """What an update checks of the changed item (tickwork.control.job_factory.JobFactory, WorkflowFactory)."""

    def first_occurrence(self, item: Checked_contra, now: datetime) -> datetime: ...

    def check_item_size(self, item: Checked_contra) -> None: ...


@dataclass(frozen=True)
class VersionedChanges(Generic[Scheduled]):
    noun: Literal["job", "workflow"]  # for the messages, and the audit record's resource
    read: Callable[[str, str], Scheduled]  # (tenant, id) -> the caller's item, or NotFound
    replace: Callable[[Scheduled, int, dict[str, Any] | None], bool]  # (changed, expected version, audit) -> won
    clock: Clock
    audit: AuditTrail

    def change(
        self,
        tenant: str,
        item_id: str,
        change: Callable[[Scheduled, datetime], Scheduled | None],
        *,
        verb: str,
        by: Attribution | None = None,
    ) -> Scheduled:
        """Apply `change` under optimistic locking; it returns None when there is nothing to do (and then no audit
        record is written). The change is attributed to `by` (`updated_by`, and its audit record `<noun>.<verb>`,
        in the same write)."""
        for _ in range(VERSION_RETRIES):
            current = self.read(tenant, item_id)
            now = self.clock.now()
            changed = change(current, now)
            if changed is None:
                return current
            stamp: dict[str, Any] = {"version": current.version + 1, "updated_at": now}
            if by is not None:
                stamp["updated_by"] = by.actor.display
            changed = changed.model_copy(update=stamp)
            audit = self.audit.item(
                by,
                tenant=tenant,
                action=f"{self.noun}.{verb}",
                resource=AuditResource(kind=self.noun, id=item_id),
                before=current,
                after=changed,
            )
            if self.replace(changed, current.version, audit):
                return changed
        raise Conflict(f"{self.noun} {item_id} is changing concurrently; try again")

    def update(
        self,
        tenant: str,
        item_id: str,
        changes: dict[str, Any],
        checks: Checks[Scheduled],
        check_changes: Callable[[Scheduled], None],
        check_completed: Callable[[Scheduled], None] | None = None,
        *,
        by: Attribution | None = None,
    ) -> Scheduled:
        """Apply a PATCH's `changes` (fields that were given): `check_changes` first (a payload against its
        type, steps as a DAG), then the whole item as at create. A new schedule recomputes the next occurrence
        from now; other changes keep the pending one, so an update never loses a run. Nothing is written if
        anything is bad; Conflict once CANCELLED, and once COMPLETED unless `check_completed` allows the change
        (it raises Conflict if not)."""

        def change(current: Scheduled, now: datetime) -> Scheduled | None:
            if current.state is JobState.COMPLETED and check_completed is not None:
                check_completed(current)
            elif current.state in (JobState.CANCELLED, JobState.COMPLETED):
                raise Conflict(f"cannot update a {current.state.value} {self.noun}")
            if not changes:
                return None
            check_changes(current)
            try:  # the rules between fields (a deadline and the retries, the jitter and the schedule), as at create
                updated = type(current).model_validate({**current.model_dump(), **_dumped(changes)})
            except ValidationError as exc:
                raise InvalidInput.from_validation(exc) from None
            if "schedule" in changes and updated.schedule != current.schedule:
                updated = updated.model_copy(update={"next_run_at": checks.first_occurrence(updated, now)})
            checks.check_item_size(updated)
            return updated

        return self.change(tenant, item_id, change, verb="update", by=by)

    def toggle(
        self,
        tenant: str,
        item_id: str,
        *,
        verb: str,
        source: JobState,
        target: JobState,
        stamp: str,
        by: Attribution | None = None,
    ) -> Scheduled:
        """`source` -> `target`, recording when in `stamp`; idempotent (already `target` is no change), and a
        Conflict from any other state."""

        def change(current: Scheduled, now: datetime) -> Scheduled | None:
            if current.state is target:
                return None
            if current.state is not source:
                raise Conflict(f"cannot {verb} a {current.state.value} {self.noun}")
            stamps: dict[str, Any] = {"state": target, stamp: now}
            if by is not None and target is JobState.PAUSED:
                stamps["paused_by"] = by.actor.display
            return current.model_copy(update=stamps)

        return self.change(tenant, item_id, change, verb=verb, by=by)

    def pause(self, tenant: str, item_id: str, *, by: Attribution | None = None) -> Scheduled:
        return self.toggle(
            tenant, item_id, verb="pause", source=JobState.ACTIVE, target=JobState.PAUSED, stamp="paused_at", by=by
        )

    def resume(self, tenant: str, item_id: str, *, by: Attribution | None = None) -> Scheduled:
        """Back to ACTIVE; the next claim records what fell while paused as skipped (`paused`)."""
        return self.toggle(
            tenant, item_id, verb="resume", source=JobState.PAUSED, target=JobState.ACTIVE, stamp="resumed_at", by=by
        )

    def cancel(self, tenant: str, item_id: str, *, by: Attribution | None = None) -> Scheduled:
        """CANCELLED, with no next occurrence (out of the due index); already cancelled is no change."""

        def change(current: Scheduled, now: datetime) -> Scheduled | None:
            if current.state is JobState.CANCELLED:
                return None
            if current.state in (JobState.CANCELLED, JobState.COMPLETED):
                raise Conflict(f"cannot cancel a {current.state.value} {self.noun}")
            return current.model_copy(update={"state": JobState.CANCELLED, "next_run_at": None})

        return self.change(tenant, item_id, change, verb="cancel", by=by)


def _dumped(changes: dict[str, Any]) -> dict[str, Any]:
    """Changes as plain data (models, and lists of them, dumped), to validate the changed item whole."""

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump()
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return {k: plain(v) for k, v in changes.items()}
