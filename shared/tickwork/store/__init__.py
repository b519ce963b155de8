"""DynamoDB data access: jobs and runs in one table, with a sparse, sharded due index.

Layout (single table, pk/sk strings):
- job:  pk=JOB#<job_id>  sk=JOB
- run:  pk=JOB#<job_id>  sk=RUN#<scheduled ms, 13 digits>[#m]   (runs of a job sort by time)
- workflow: as a job (pk=JOB#<workflow id>, sk=JOB, kind=WORKFLOW); its runs at sk=RUN#<ms>[#m]
  (kind=WORKFLOW_RUN), each step's run at sk=STEP#<ms>[#m]#<step id> (an ordinary run)

Indexes:
- `due-index` (sparse; due_shard, due_at ms): the queue of claimable work. A job carries the keys while it
  is ACTIVE with a next occurrence; a run carries them from its claim until its outcome (due_at = when to
  re-send it if nobody has leased it, or if its lease lapsed with its message stranded: orphan recovery).
  Claiming a job, and a run's outcome, REMOVE the keys (a retry sets them to its re-send time). An audit record
  carries them (due_shard=AUDIT, a partition the claim never reads) until the tick has archived it.
- `tenant-index` (tenant_key, tenant_sort): a tenant's jobs newest first (T#<tenant>#JOB) and its
  FAILED runs newest first (T#<tenant>#FAILED), so the API never scans.

Every state change is a conditional write; the condition is the lock (see docs/architecture.md, "How the promises hold").

The package, one module a concern:
- `codec`: keys, attribute-value encoding, and the job/run <-> item mappings (pure, no client);
- `conditional`: `Table`, the client and table name, and the one place a conditional write's outcome is read;
  `Update`, the one builder of an update expression whose clauses depend on the change;
- `jobs`: `JobRecords`, the job items (create, replace, claim advance, completion);
- `breakers` and `running_slots`: `BreakerRecords` and `RunningSlots`, the job item's circuit breaker and its
  running slot (overlap), each written by the executor's gate of that name;
- `runs`: `RunRecords`, the run items (claim puts, requeue, a job's runs, the asks a run carries);
- `leases`: `RunLeases`, the executor's writes under a run's lease (lease, heartbeat, outcome, deferral, cancel);
- `due_index`: `DueIndex`, the due-index query, the shard leases and a run's re-send time; a due item read into
  the claim plan's `ClaimableJob` (`DueItem.claimable`);
- `listings` and `cursors`: `Listings`, a tenant's jobs, runs and DLQ page by page, with opaque `Cursors`;
- `event_outbox`: `EventOutbox`, run events not yet known to be published (tickwork.model.run_events);
- `idempotency`: `IdempotencyRecords`, the records behind create's Idempotency-Key;
- `workflows`: `WorkflowRecords`, the workflow and workflow run items (built over the same `Table`);
- `tenants`: `TenantRecords`, a tenant's settings and usage (pk=TENANT#<tenant>; built over the same `Table`), and
  `KnownTenants`, the tenants the stack knows (pk=TENANTS, sk=<tenant>), whose partitions an admin's `*` reads;
- `limits`: `LimitRecords`, concurrency semaphores and rate limits (pk=TENANT#<tenant>, sk=LIMIT#...);
- `ordering`: `OrderingRecords`, ordering keys' queues and heads (pk=TENANT#<tenant>, sk=ORDER#...), which
  `RunRecords` writes a new run's queue entry through;
- `debounce`: `DebounceWindows`, a job's debounce windows (pk=JOB#<job_id>, sk=DEBOUNCE#...) and their runs' joins.
- `expiry`: without TTL (RegionMode strong), `ExpiryMarks`, the expiry bucket `Table` adds to every write of
  `expires_at` (the sparse `expiry-index`), and `ExpiredItems`, the tick's sweep of it (cursor pk=EXPIRY, sk=SWEPT).
- `audit`: the audit records' items (pk=AUDIT#<tenant>, sk=<ms>#<id>), each written in the transaction of the change
  it records (`Table`'s `audit=`), `AuditQuery`, the Query of a page of them (`Listings.list_audit`), and
  `AuditOutbox`, the records waiting for their archive to S3 and their release to TTL once archived;
- `pending_audits`: `PendingAudits`, an audited change without a transaction (RegionMode strong): its record
  pending, the change, the record confirmed; and the settling of what a dead request left.
`JobStore` below builds the record classes of jobs and runs over one `Table` (`jobs`, `runs`, `leases`, `due`,
`breakers`, `slots`) and holds what the others are built with (`shared_table`, `shards`, `retention`). It forwards
nothing: the wiring (tickwork.services) hands each caller the record class it uses, so a call names its target.
Callers use the names exported here.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tickwork.model.ids import ItemKind
from tickwork.store.breakers import BreakerRecords
from tickwork.store.codec import (
    TENANT,
    deserialize,
    expression_values,
    job_from_attrs,
    job_key,
    job_to_item,
    run_from_attrs,
    run_key,
    run_to_attrs,
    serialize,
    shard_of,
    workflow_run_key,
)
from tickwork.store.conditional import Table
from tickwork.store.cursors import Cursors, cursor_key
from tickwork.store.due_index import (
    DUE_INDEX,
    DUE_INDEX_PROJECTION,
    TENANT_INDEX,
    TENANT_INDEX_PROJECTION,
    DueIndex,
    DueItem,
)
from tickwork.store.event_outbox import EVENTS_PENDING, EventOutbox
from tickwork.store.expiry import ExpiredItems, ExpiryMarks
from tickwork.store.idempotency import IDEMPOTENCY_KEY, IdempotencyRecord, IdempotencyRecords
from tickwork.store.jobs import JobRecords
from tickwork.store.leases import Finished, Lease, LeaseExtension, LeaseOutcome, RunLeases
from tickwork.store.limits import TENANT_SEMAPHORE, LimitRecords, RateAdmission, rate_sort, semaphore_sort
from tickwork.store.listings import DEFAULT_LIMIT, MAX_LIMIT, Listings, Page
from tickwork.store.ordering import Head, OrderingRecords, QueueEntry
from tickwork.store.pending_audits import PendingAudits
from tickwork.store.reading import (
    UNREADABLE,
    item_bytes,
    note_unreadable,
    read_job,
    read_run,
    read_workflow,
    read_workflow_run,
)
from tickwork.store.regions import RegionRoleRecords
from tickwork.store.running_slots import RunningSlots, SlotClaim
from tickwork.store.runs import ClaimedRuns, RunRecords
from tickwork.store.tenants import KnownTenants, TenantRecords
from tickwork.store.workflows import WorkflowRecords

__all__ = [
    "DEFAULT_LIMIT",
    "DUE_INDEX",
    "DUE_INDEX_PROJECTION",
    "EVENTS_PENDING",
    "IDEMPOTENCY_KEY",
    "MAX_LIMIT",
    "TENANT",
    "TENANT_INDEX",
    "TENANT_INDEX_PROJECTION",
    "TENANT_SEMAPHORE",
    "UNREADABLE",
    "BreakerRecords",
    "ClaimedRuns",
    "Cursors",
    "DueIndex",
    "DueItem",
    "EventOutbox",
    "ExpiredItems",
    "ExpiryMarks",
    "Finished",
    "Head",
    "IdempotencyRecord",
    "IdempotencyRecords",
    "ItemKind",
    "JobRecords",
    "JobStore",
    "KnownTenants",
    "Lease",
    "LeaseExtension",
    "LeaseOutcome",
    "LimitRecords",
    "Listings",
    "OrderingRecords",
    "Page",
    "PendingAudits",
    "QueueEntry",
    "RateAdmission",
    "RunLeases",
    "RunRecords",
    "RunningSlots",
    "SlotClaim",
    "Table",
    "TenantRecords",
    "WorkflowRecords",
    "cursor_key",
    "deserialize",
    "expression_values",
    "item_bytes",
    "job_from_attrs",
    "job_key",
    "job_to_item",
    "note_unreadable",
    "rate_sort",
    "read_job",
    "read_run",
    "read_workflow",
    "read_workflow_run",
    "run_from_attrs",
    "run_key",
    "run_to_attrs",
    "semaphore_sort",
    "serialize",
    "shard_of",
    "workflow_run_key",
]


class JobStore:
    """Jobs and runs in one DynamoDB table. Takes its client; builds none.

    Its parts, `jobs` (JobRecords), `runs` (RunRecords), `leases` (RunLeases), `due` (DueIndex), `breakers` (BreakerRecords),
    `slots` (RunningSlots) and `regions` (RegionRoleRecords), share one `Table`; callers are handed the part they use."""

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        shards: int = 8,
        retention_days: int = 30,
        pending_audits: PendingAudits | None = None,
        expiry_marks: ExpiryMarks | None = None,
    ) -> None:
        # `pending_audits`: how an audited change is written without a transaction (RegionMode strong); None: in one.
        # `expiry_marks`: the expiry index's (RegionMode strong: no TTL): every write of `expires_at` marks its bucket.
        self._table = Table(client, table_name, audited_writes=pending_audits, expiry=expiry_marks)
        self.table = table_name
        self.shards = shards
        self.retention = timedelta(days=retention_days)
        self.jobs = JobRecords(self._table, shards=shards)
        self.runs = RunRecords(self._table, shards=shards, retention=self.retention)
        self.leases = RunLeases(self._table, shards=shards, retention=self.retention)
        self.due = DueIndex(self._table)
        self.breakers = BreakerRecords(self._table)
        self.slots = RunningSlots(self._table)
        self.regions = RegionRoleRecords(self._table)

    @property
    def shared_table(self) -> Table:
        """The table and client the parts share, for the other record kinds built over it (listings,
        idempotency records), so that swapping the client reaches them too."""
        return self._table

    @property
    def _db(self) -> Any:
        """The client, shared by the parts: replacing it (a test injecting faults) replaces it for all."""
        return self._table.client

    @_db.setter
    def _db(self, client: Any) -> None:
        self._table.client = client
