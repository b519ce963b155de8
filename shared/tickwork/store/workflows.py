"""Workflow records (pk=JOB#<workflow id>, sk=JOB) and workflow run records (pk=JOB#<workflow id>,
sk=RUN#<ms>[#m]). A workflow's step runs are ordinary run records (sk=STEP#..., see `runs`).

A workflow sits where a job would and carries the same claim attributes, so the due index, the claim's advance
(`JobRecords.advance_job`) and the completion (`complete_if_settled`) serve it unchanged. A RUNNING workflow
run is in the due index too, at the time the tick should reconcile it (every step's end pushes it out).

Every change to a workflow run is one conditional UpdateItem that returns the item (as it left it, or as its
condition saw it), so whoever records progress plans the next step from the current run without another read.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import iso, to_ms
from tickwork.model.ids import parse_workflow_run_id
from tickwork.model.states import SkipReason
from tickwork.model.workflow.advance import StepStatus, WorkflowRunStatus
from tickwork.model.workflow.definition import Workflow
from tickwork.model.workflow.runs import StepEntry, WorkflowRunRecord
from tickwork.store.codec import (
    ROOTS_DEADLINE_SECONDS,
    deserialize,
    job_key,
    serialize,
    shard_of,
    workflow_run_key,
    workflow_run_to_attrs,
    workflow_to_item,
)
from tickwork.store.conditional import Table, Update
from tickwork.store.due_index import postpone_due
from tickwork.store.jobs import counted_item, replace_scheduled
from tickwork.store.reading import read_workflow, read_workflow_run
from tickwork.store.tenants import TenantRecords


class _StepUpdate(Update):
    """An update of a workflow run's steps: each step id behind a name placeholder (ids may hold `-`)."""

    def __init__(self) -> None:
        super().__init__({"#status": "status"})

    def step(self, step_id: str) -> str:
        """The path of a step's entry in the map."""
        return self._entry("#steps", "steps", step_id)

    def compensation(self, step_id: str) -> str:
        """The path of a step's compensation's entry in the compensations' map."""
        return self._entry("#compensations", "compensations", step_id)

    def _entry(self, map_name: str, attribute: str, step_id: str) -> str:
        placeholder = self.name(step_id)
        self.names.setdefault(map_name, attribute)  # only where used: DynamoDB refuses an unused name
        return f"{map_name}.{placeholder}"

    def path(self, step_id: str, *, compensation: bool = False) -> str:
        return self.compensation(step_id) if compensation else self.step(step_id)

    def set_entry(self, step_id: str, entry: StepEntry, *, compensation: bool = False) -> None:
        self.set(self.path(step_id, compensation=compensation), entry.model_dump(mode="json", exclude_none=True))

    def require_step(self, step_id: str, status: StepStatus, *, compensation: bool = False) -> None:
        self.conditions.append(f"{self.path(step_id, compensation=compensation)}.#status = {self.value(status.value)}")

    def require_run(self, status: WorkflowRunStatus) -> None:
        self.conditions.append(f"#status = {self.value(status.value)}")


# What a workflow item holds that its model decides (see tickwork.store.jobs.JOB_ATTRIBUTES).
WORKFLOW_ATTRIBUTES = frozenset(
    (set(Workflow.model_fields) - {"id", "steps"}) | {"due_shard", "due_at", ROOTS_DEADLINE_SECONDS}
)


class WorkflowRecords:
    """The workflow and workflow run items of the table. Ended runs get `expires_at` (TTL), as runs do."""

    def __init__(self, table: Table, *, shards: int, retention: timedelta) -> None:
        self._table = table
        self.shards = shards
        self.retention = retention
        self._tenants = TenantRecords(table)

    # ------------------------------------------------------------ workflows

    def put_new_workflow(
        self, workflow: Workflow, *, counted: bool = False, audit: dict[str, Any] | None = None
    ) -> bool:
        """Durable create; False if the id exists. `counted`: its tenant's `active_jobs` counts it. `audit`: its
        audit record's item, in the same transaction."""
        item = counted_item(workflow_to_item(workflow, self.shards), workflow.tenant, counted)
        won, _ = self._table.put_if_absent(item, return_old=False, audit=audit)
        return won

    def get_workflow(self, workflow_id: str, *, consistent: bool = True) -> Workflow | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=job_key(workflow_id), ConsistentRead=consistent
        ).get("Item")
        if not item:
            return None
        attrs = deserialize(item)
        return read_workflow(attrs) if attrs.get("kind") == "WORKFLOW" else None

    def replace_workflow(
        self, workflow: Workflow, *, expected_version: int, audit: dict[str, Any] | None = None
    ) -> bool:
        """Write a changed workflow (pause, resume, cancel, update) if nobody changed it since `expected_version`;
        a cancel leaves the tenant's `active_jobs` (tickwork.store.jobs.replace_scheduled)."""
        return replace_scheduled(
            self._table,
            self._tenants,
            workflow_to_item(workflow, self.shards),
            expected_version=expected_version,
            attributes=WORKFLOW_ATTRIBUTES,
            audit=audit,
        )

    # ------------------------------------------------------------ workflow runs

    def put_workflow_run(
        self,
        record: WorkflowRunRecord,
        *,
        now: datetime,
        reconcile_at: datetime | None,
        audit: dict[str, Any] | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """Create a workflow run only if absent: the lock on its occurrence (exactly one run per occurrence).
        A RUNNING one goes into the due index at `reconcile_at`; an ended one (skipped) expires. Returns (won,
        the existing item's attributes if lost). `audit`: a manual run's audit record's item, in the same
        transaction."""
        attrs = workflow_run_to_attrs(record)
        attrs["claimed_at_ms"] = to_ms(now)
        if record.status is WorkflowRunStatus.RUNNING:
            assert reconcile_at is not None
            attrs["due_shard"] = shard_of(record.workflow_id, self.shards)
            attrs["due_at"] = to_ms(reconcile_at)
        else:
            attrs["expires_at"] = self._expiry(now)
        return self._table.put_if_absent(serialize(attrs), audit=audit)

    def get_workflow_run(self, workflow_run_id: str, *, consistent: bool = True) -> WorkflowRunRecord | None:
        if parse_workflow_run_id(workflow_run_id) is None:
            return None
        item = self._table.client.get_item(
            TableName=self._table.name, Key=workflow_run_key(workflow_run_id), ConsistentRead=consistent
        ).get("Item")
        return read_workflow_run(deserialize(item)) if item else None

    def get_workflow_runs(self, workflow_run_ids: list[str]) -> dict[str, WorkflowRunRecord]:
        """The workflow runs of these ids that exist, by id (BatchGetItem, consistent)."""
        ids = [run_id for run_id in dict.fromkeys(workflow_run_ids) if parse_workflow_run_id(run_id) is not None]
        items = self._table.batch_get([workflow_run_key(run_id) for run_id in ids]) if ids else []
        records = [read_workflow_run(attrs) for attrs in items]
        return {record.id: record for record in records}

    def settle_step(
        self,
        workflow_run_id: str,
        step_id: str,
        entry: StepEntry,
        *,
        reconcile_at: datetime,
        compensation: bool = False,
    ) -> tuple[bool, WorkflowRunRecord | None]:
        """A step's run (or, `compensation`, its compensation's) ended: its entry becomes `entry`, only while the
        map has it QUEUED (a second report of the same end changes nothing). Pushes the run's reconciliation out.
        Returns (won, the run now)."""
        update = _StepUpdate()
        update.set_entry(step_id, entry, compensation=compensation)
        update.require_step(step_id, StepStatus.QUEUED, compensation=compensation)
        # A run that has ended is out of the due index (no due_shard): due_at alone does not put it back.
        update.set("due_at", to_ms(reconcile_at))
        return self._update(workflow_run_id, update)

    def record_decisions(
        self,
        workflow_run_id: str,
        decisions: Mapping[str, StepEntry],
        *,
        final: WorkflowRunStatus | None,
        now: datetime,
        cause: WorkflowRunStatus = WorkflowRunStatus.FAILED,
        audit: dict[str, Any] | None = None,
    ) -> tuple[bool, WorkflowRunRecord | None]:
        """Record a plan (tickwork.model.workflow.advance): each decided step's entry, only while the run is RUNNING and
        each of them is still PENDING, so a plan applied twice, or two plans at once, record each step once. With
        `final`, the run ends: its status, finished_at, expiry, and out of the due index; or, COMPENSATING, its
        compensation begins (`cause`: FAILED, or CANCELLED by a cancel asking for it). Returns (won, the run
        now).

        The reconciliation time is not pushed here: a plan follows the step's end that pushed it (or the
        reconciliation that postponed it) at once, and moving `due_at`, a due-index key, would rewrite the
        run's index entry again (2 WRU) for nothing."""
        update = _StepUpdate()
        update.require_run(WorkflowRunStatus.RUNNING)
        for step_id, entry in decisions.items():
            update.set_entry(step_id, entry)
            update.require_step(step_id, StepStatus.PENDING)
        if final is WorkflowRunStatus.COMPENSATING:
            # Not an end: the run stays in the due index, and its compensations' map begins.
            update.set("#status", final.value)
            update.set("compensating_for", cause.value)
            update.set("compensations", {})
        elif final is not None:
            self._end(update, final, now)
        return self._update(workflow_run_id, update, audit)

    def record_compensations(
        self,
        workflow_run_id: str,
        decisions: Mapping[str, StepEntry],
        *,
        final: WorkflowRunStatus | None,
        now: datetime,
    ) -> tuple[bool, WorkflowRunRecord | None]:
        """Record a compensation plan (tickwork.model.workflow.compensation): each decided compensation's entry, only
        while the run is COMPENSATING and each of them is still undecided; with `final`, the run ends. Returns
        (won, the run now)."""
        update = _StepUpdate()
        update.require_run(WorkflowRunStatus.COMPENSATING)
        for step_id, entry in decisions.items():
            update.set_entry(step_id, entry, compensation=True)
            path, pending = update.compensation(step_id), update.value(StepStatus.PENDING.value)
            update.conditions.append(f"(attribute_not_exists({path}) OR {path}.#status = {pending})")
        if final is not None:
            self._end(update, final, now)
        return self._update(workflow_run_id, update)

    def reopen(
        self,
        workflow_run_id: str,
        entries: Mapping[str, StepEntry],
        *,
        reconcile_at: datetime,
        audit: dict[str, Any] | None = None,
    ) -> tuple[bool, WorkflowRunRecord | None]:
        """FAILED -> RUNNING (a retry) with these steps' entries replaced, back in the due index. `audit`: the
        retry's audit record's item, in the same transaction."""
        parsed = parse_workflow_run_id(workflow_run_id)
        assert parsed is not None
        update = _StepUpdate()
        update.require_run(WorkflowRunStatus.FAILED)
        for step_id, entry in entries.items():
            update.set_entry(step_id, entry)
        update.set("#status", WorkflowRunStatus.RUNNING.value)
        update.set("due_shard", shard_of(parsed.job_id, self.shards))
        update.set("due_at", to_ms(reconcile_at))
        update.removes += ["finished_at", "expires_at"]
        return self._update(workflow_run_id, update, audit)

    def withdraw_workflow_run(self, workflow_run_id: str, reason: SkipReason, *, now: datetime) -> bool:
        """RUNNING -> SKIPPED `reason`: a run opened by a claim its workflow's pause or cancel overtook (see
        tickwork.tick.workflow_occurrences). Its steps' entries stay as they are; its queued runs are skipped by the
        executors that take them. False if the run is no longer RUNNING."""
        update = _StepUpdate()
        update.require_run(WorkflowRunStatus.RUNNING)
        update.set("skip_reason", reason.value)
        self._end(update, WorkflowRunStatus.SKIPPED, now)
        won, _ = self._update(workflow_run_id, update)
        return won

    def postpone_reconcile(self, workflow_run_id: str, *, expected_due_at: int, new_due_at: int) -> bool:
        """Move a RUNNING (or COMPENSATING) run's reconciliation; only the tick that moves it reconciles it now."""
        live = (WorkflowRunStatus.RUNNING, WorkflowRunStatus.COMPENSATING)
        key = workflow_run_key(workflow_run_id)
        return postpone_due(self._table, key, live, expected_due_at=expected_due_at, new_due_at=new_due_at)

    def _end(self, update: _StepUpdate, status: WorkflowRunStatus, now: datetime) -> None:
        update.set("#status", status.value)
        update.set("finished_at", iso(now))
        update.set("expires_at", self._expiry(now))
        update.removes += ["due_shard", "due_at"]

    def _update(
        self, workflow_run_id: str, update: _StepUpdate, audit: dict[str, Any] | None = None
    ) -> tuple[bool, WorkflowRunRecord | None]:
        """(won, the run as the update left it, or as its condition saw it if lost). With `audit`, one transaction
        with that audit item; a transaction returns no item, so the run it left is read after it."""
        args = (
            workflow_run_key(workflow_run_id),
            update.expression(),
            " AND ".join(["attribute_exists(pk)", *update.conditions]),
            update.names,
            update.attribute_values(),
        )
        if audit is not None:
            won, attrs = self._table.update_if_audited(*args, audit)
            if won:
                return True, self.get_workflow_run(workflow_run_id)
        else:
            won, attrs = self._table.update_if_returning_new(*args)
        return won, read_workflow_run(attrs) if attrs else None

    def _expiry(self, now: datetime) -> int:
        return int((now + self.retention).timestamp())
