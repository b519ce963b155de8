"""DynamoDB data access: jobs and runs in one table, with a sparse, sharded due index.

Layout (single table, pk/sk strings):
- job:  pk=JOB#<job_id>  sk=JOB
- run:  pk=JOB#<job_id>  sk=RUN#<scheduled ms, 13 digits>[#m]   (runs of a job sort by time)

Indexes:
- `due-index` (sparse; due_shard, due_at ms): the queue of claimable work. A job carries the keys while it
  is ACTIVE with a next occurrence; a run carries them from its claim until an executor leases it
  (due_at = when to re-send it if nobody has: orphan recovery). Claiming and leasing REMOVE the keys.
- `tenant-index` (tenant_key, tenant_sort): a tenant's jobs newest first (T#<tenant>#JOB) and its
  FAILED runs newest first (T#<tenant>#FAILED), so the API never scans.

Every state change is a conditional write; the condition is the lock (see README, "How the promises hold").
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from tickwork.clock import iso, to_ms
from tickwork.models import (
    Job,
    JobState,
    Run,
    RunError,
    RunResult,
    RunStatus,
    RunTrigger,
    SkipReason,
    parse_run_id,
)

DUE_INDEX = "due-index"
TENANT_INDEX = "tenant-index"
# The due index projects only what a claim needs (never the payload): template.yaml must list the same.
DUE_INDEX_PROJECTION = (
    "kind",
    "job_id",
    "run_id",
    "tenant",
    "priority",
    "schedule",
    "state",
    "version",
    "next_run_at",
    "misfire_grace_seconds",
    "paused_at",
    "resumed_at",
    "status",
    "scheduled_for",
    "overlap",
    "type",
    "trigger",
    "created_at",
)

_ser = TypeSerializer()
_des = TypeDeserializer()


class ItemKind(StrEnum):
    JOB = "JOB"
    RUN = "RUN"


def shard_of(job_id: str, shards: int) -> str:
    """Stable shard for a job and all its runs. Shards may grow, never shrink (old ones stay queried)."""
    return str(zlib.crc32(job_id.encode()) % shards)


def job_key(job_id: str) -> dict[str, Any]:
    return {"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": "JOB"}}


def run_key(run_id: str) -> dict[str, Any]:
    parsed = parse_run_id(run_id)
    if parsed is None:
        raise ValueError(f"not a run id: {run_id!r}")
    job_id, scheduled_for, trigger = parsed
    suffix = "#m" if trigger is RunTrigger.MANUAL else ""
    return {"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": f"RUN#{to_ms(scheduled_for):013d}{suffix}"}}


def _plain(value: Any) -> Any:
    """DynamoDB's Decimals back to int/float."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set):
        return [_plain(v) for v in value]
    return value


def _dynamo(value: Any) -> Any:
    """JSON-ish Python to what TypeSerializer takes (floats become Decimals, None values dropped)."""
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _dynamo(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_dynamo(v) for v in value]
    return value


def serialize(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _ser.serialize(_dynamo(v)) for k, v in attrs.items() if v is not None}


def deserialize(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _plain(_des.deserialize(v)) for k, v in item.items()}


def expression_values(**values: Any) -> dict[str, Any]:
    return {f":{k}": _ser.serialize(_dynamo(v)) for k, v in values.items()}


# ---------------------------------------------------------------- item <-> model


def job_to_item(job: Job, shards: int) -> dict[str, Any]:
    data = job.model_dump(mode="json", exclude={"id", "payload"})
    attrs: dict[str, Any] = {
        "pk": f"JOB#{job.id}",
        "sk": "JOB",
        "kind": ItemKind.JOB.value,
        "job_id": job.id,
        "payload_json": json.dumps(job.payload, separators=(",", ":"), sort_keys=True),
        "tenant_key": f"T#{job.tenant}#JOB",
        "tenant_sort": f"{to_ms(job.created_at):013d}#{job.id}",
        **data,
    }
    if job.state is JobState.ACTIVE and job.next_run_at is not None:
        attrs["due_shard"] = shard_of(job.id, shards)
        attrs["due_at"] = to_ms(job.next_run_at)
    return serialize(attrs)


_JOB_FIELDS = set(Job.model_fields)
_RUN_FIELDS = set(Run.model_fields)


def job_from_attrs(attrs: Mapping[str, Any]) -> Job:
    data = {k: v for k, v in attrs.items() if k in _JOB_FIELDS}
    data["id"] = attrs["job_id"]
    data["payload"] = json.loads(attrs.get("payload_json") or "{}")
    return Job.model_validate(data)


def run_to_attrs(run: Run) -> dict[str, Any]:
    data = run.model_dump(mode="json", exclude={"id"})
    key = run_key(run.id)
    return {"pk": key["pk"]["S"], "sk": key["sk"]["S"], "kind": ItemKind.RUN.value, "run_id": run.id, **data}


def run_from_attrs(attrs: Mapping[str, Any]) -> Run:
    data = {k: v for k, v in attrs.items() if k in _RUN_FIELDS}
    data["id"] = attrs["run_id"]
    return Run.model_validate(data)


@dataclass(frozen=True)
class DueItem:
    """One entry of the due index, as projected (no payload)."""

    kind: ItemKind
    shard: str
    due_at: int
    attrs: dict[str, Any]

    @property
    def priority(self) -> int:
        return int(self.attrs.get("priority", 5))


@dataclass(frozen=True)
class ClaimedRuns:
    created: list[Run]  # the runs this claimer created, and so sends
    existing: dict[str, dict[str, Any]]  # run id -> the record another claimer had already created
    in_flight_elsewhere: bool  # another claimer is on this job right now: leave it the job


class LeaseOutcome(StrEnum):
    LEASED = "LEASED"
    TERMINAL = "TERMINAL"  # already finished: a duplicate delivery
    BUSY = "BUSY"  # another executor holds a live lease
    EARLY = "EARLY"  # retrying, but its next attempt may not start yet (run.not_before)
    MISSING = "MISSING"  # no such run


@dataclass(frozen=True)
class Lease:
    outcome: LeaseOutcome
    run: Run | None
    previous_status: RunStatus | None = None
    lease_until: datetime | None = None


class JobStore:
    """Jobs and runs in one DynamoDB table. Takes its client; builds none."""

    def __init__(self, client: Any, table_name: str, *, shards: int = 8, retention_days: int = 30) -> None:
        self._db = client
        self.table = table_name
        self.shards = shards
        self.retention = timedelta(days=retention_days)

    # ------------------------------------------------------------ jobs

    def put_new_job(self, job: Job) -> bool:
        """Durable create (the API's acknowledgement waits for this write); False if the id exists."""
        won, _ = self._put_if_absent(job_to_item(job, self.shards), return_old=False)
        return won

    def get_job(self, job_id: str, *, consistent: bool = True) -> Job | None:
        item = self._db.get_item(TableName=self.table, Key=job_key(job_id), ConsistentRead=consistent).get("Item")
        return job_from_attrs(deserialize(item)) if item else None

    def replace_job(self, job: Job, *, expected_version: int) -> bool:
        """Write a changed job (pause, resume, cancel, update) if nobody changed it since `expected_version`."""
        return self._put_if(
            job_to_item(job, self.shards),
            "attribute_exists(pk) AND version = :v",
            None,
            expression_values(v=expected_version),
        )

    def complete_if_settled(self, job_id: str, now: datetime) -> bool:
        """ACTIVE -> COMPLETED once the job's last occurrence has settled, and out of the due index for good.

        Only while it has no pending occurrence (`next_run_at` absent): a PATCH that moved a one-shot's `at`,
        or gave a recurring job more occurrences, set one, and then the job is not complete."""
        return self._update_if(
            job_key(job_id),
            "SET #state = :done, updated_at = :now, version = version + :one REMOVE due_shard, due_at",
            "#state = :active AND attribute_not_exists(next_run_at)",
            {"#state": "state"},
            expression_values(done=JobState.COMPLETED.value, active=JobState.ACTIVE.value, now=iso(now), one=1),
        )

    def take_running_slot(self, job_id: str, *, run_id: str, until: datetime, now: datetime) -> bool:
        """Overlap SKIP's atomic decision: the job's one running slot, held by one run at a time.

        Free when empty, expired (its holder's lease ended: it died), or already this run's (a takeover)."""
        return self._update_if(
            job_key(job_id),
            "SET running_run = :run, running_until_ms = :until",
            "attribute_exists(pk) AND (attribute_not_exists(running_run) OR running_until_ms < :now "
            "OR running_run = :run)",
            None,
            expression_values(run=run_id, until=to_ms(until), now=to_ms(now)),
        )

    def extend_running_slot(self, job_id: str, *, run_id: str, until: datetime) -> bool:
        return self._update_if(
            job_key(job_id),
            "SET running_until_ms = :until",
            "running_run = :run",
            None,
            expression_values(run=run_id, until=to_ms(until)),
        )

    def release_running_slot(self, job_id: str, *, run_id: str) -> None:
        self._update_if(
            job_key(job_id),
            "REMOVE running_run, running_until_ms",
            "running_run = :run",
            None,
            expression_values(run=run_id),
        )

    # ------------------------------------------------------------ due index

    def query_due(self, shard: str, until_ms: int, *, page_size: int = 200, max_items: int = 5000) -> Iterator[DueItem]:
        """Due entries of one shard, oldest first, paginated."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": DUE_INDEX,
            "KeyConditionExpression": "due_shard = :s AND due_at <= :u",
            "ExpressionAttributeValues": expression_values(s=shard, u=until_ms),
            "Limit": page_size,
        }
        seen = 0
        while True:
            page = self._db.query(**kwargs)
            for raw in page.get("Items", []):
                attrs = deserialize(raw)
                yield DueItem(ItemKind(attrs["kind"]), shard, int(attrs["due_at"]), attrs)
                seen += 1
                if seen >= max_items:
                    return
            if "LastEvaluatedKey" not in page:
                return
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def acquire_shard(self, shard: str, *, owner: str, now: datetime, lease_for: timedelta) -> bool:
        """A tick's short lease on a shard, so racing ticks split the shards instead of all walking the same
        items. Only an efficiency measure: the run's conditional put is what keeps claims exactly-once."""
        item = serialize(
            {"pk": f"SHARD#{shard}", "sk": "LEASE", "kind": "SHARD", "owner": owner, "until_ms": to_ms(now + lease_for)}
        )
        return self._put_if(
            item,
            "attribute_not_exists(pk) OR until_ms < :now OR #owner = :owner",
            {"#owner": "owner"},
            expression_values(now=to_ms(now), owner=owner),
        )

    def release_shard(self, shard: str, *, owner: str) -> None:
        self._update_if(
            {"pk": {"S": f"SHARD#{shard}"}, "sk": {"S": "LEASE"}},
            "SET until_ms = :zero",
            "#owner = :owner",
            {"#owner": "owner"},
            expression_values(zero=0, owner=owner),
        )

    def put_claimed_runs(
        self,
        runs: Sequence[Run],
        *,
        now: datetime,
        redispatch_after: timedelta,
        in_flight_for: timedelta = timedelta(seconds=30),
    ) -> ClaimedRuns:
        """The claim's first write (promise 2): each run record is created only if it does not exist. This is
        the lock on the occurrence: whoever creates a run sends it; a run found existing was claimed by someone
        else (who sends it, or, had it died, the orphan re-send does). The existing records come back, so the
        claimer can advance the job past exactly what they cover (a capped misfire record may cover less)."""
        shard = None
        created: list[Run] = []
        existing: dict[str, dict[str, Any]] = {}
        for index, run in enumerate(runs):
            shard = shard or shard_of(run.job_id, self.shards)
            attrs = run_to_attrs(run)
            attrs["claimed_at_ms"] = to_ms(now)
            if run.status is RunStatus.QUEUED:
                # In the due index until an executor leases it: if none has by then, the tick re-sends it.
                attrs["due_shard"] = shard
                attrs["due_at"] = to_ms(run.scheduled_for + redispatch_after)
            else:
                attrs["expires_at"] = self._expiry(now)
            won, old = self._put_if_absent(serialize(attrs))
            if won:
                created.append(run)
                continue
            claimed_ms = int(old.get("claimed_at_ms", 0))
            if index == 0 and to_ms(now) - claimed_ms < in_flight_for.total_seconds() * 1000:
                # Another claimer is on this job right now: leave it the rest (and the advance).
                return ClaimedRuns(created=[], existing={run.id: old}, in_flight_elsewhere=True)
            existing[run.id] = old  # its claimer died part-way: carry the claim through
        return ClaimedRuns(created=created, existing=existing, in_flight_elsewhere=False)

    def advance_job(
        self, job_id: str, *, expected_version: int, next_run_at: datetime | None, complete: bool, now: datetime
    ) -> bool:
        """The claim's second write: the job moves past the claimed occurrences, only from `expected_version`.

        A claimer that dies before this leaves the job un-advanced; the next claimer finds the runs existing
        and just completes this step. Nothing is lost and nothing doubled, as with a transaction, at half its
        cost (a transaction bills 2 WRU per item) and with no cross-item lock. `complete` (the last occurrence
        is already settled, as a skip record) also takes the job out of the due index for good."""
        shard = shard_of(job_id, self.shards)
        values = expression_values(v=expected_version, active=JobState.ACTIVE.value, one=1, now=iso(now))
        sets = ["version = version + :one", "updated_at = :now"]
        removes: list[str] = []
        if next_run_at is not None:
            sets += ["next_run_at = :next", "due_at = :due", "due_shard = :shard"]
            values.update(expression_values(next=iso(next_run_at), due=to_ms(next_run_at), shard=shard))
        else:
            removes += ["next_run_at", "due_at", "due_shard"]
        if complete:
            sets.append("#state = :completed")
            values.update(expression_values(completed=JobState.COMPLETED.value))
        return self._update_if(
            job_key(job_id),
            "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else ""),
            "version = :v AND #state = :active",
            {"#state": "state"},
            values,
        )

    def put_queued_run(self, run: Run, *, redispatch_at: datetime) -> bool:
        """A run outside the schedule (trigger): created QUEUED, in the due index until leased."""
        attrs = run_to_attrs(run)
        attrs["due_shard"] = shard_of(run.job_id, self.shards)
        attrs["due_at"] = to_ms(redispatch_at)
        won, _ = self._put_if_absent(serialize(attrs), return_old=False)
        return won

    def postpone_redispatch(self, run_id: str, *, expected_due_at: int, new_due_at: int) -> bool:
        """Move an unleased run's re-send time; only the tick that moves it re-sends it."""
        return self._update_if(
            run_key(run_id),
            "SET due_at = :new",
            "#status IN (:queued, :retrying) AND due_at = :old",
            {"#status": "status"},
            expression_values(
                new=new_due_at, old=expected_due_at, queued=RunStatus.QUEUED.value, retrying=RunStatus.RETRYING.value
            ),
        )

    # ------------------------------------------------------------ runs

    def get_run(self, run_id: str, *, consistent: bool = True) -> Run | None:
        item = self._db.get_item(TableName=self.table, Key=run_key(run_id), ConsistentRead=consistent).get("Item")
        return run_from_attrs(deserialize(item)) if item else None

    def lease_run(self, run_id: str, *, owner: str, now: datetime, lease_for: timedelta) -> Lease:
        """Take the run: QUEUED, RETRYING whose backoff has passed, or RUNNING whose lease expired, becomes
        RUNNING with attempts+1. The condition is promise 4's lock (at most one live lease per run) and keeps
        the retry backoff (no duplicate message starts an attempt before `not_before`)."""
        parsed = parse_run_id(run_id)
        if parsed is None:
            return Lease(LeaseOutcome.MISSING, None)
        lease_until = now + lease_for
        lateness = to_ms(now) - to_ms(parsed[1])
        try:
            old_raw = self._db.update_item(
                TableName=self.table,
                Key=run_key(run_id),
                UpdateExpression=(
                    "SET #status = :running, attempts = if_not_exists(attempts, :zero) + :one, "
                    "lease_owner = :owner, lease_until = :lu, lease_until_ms = :lu_ms, "
                    "started_at = if_not_exists(started_at, :now), lateness_ms = if_not_exists(lateness_ms, :late) "
                    "REMOVE due_shard, due_at, not_before, not_before_ms"
                ),
                ConditionExpression=(
                    "attribute_exists(pk) AND (#status = :queued "
                    "OR (#status = :retrying AND (attribute_not_exists(not_before_ms) OR not_before_ms <= :now_ms)) "
                    "OR (#status = :running AND lease_until_ms < :now_ms))"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=expression_values(
                    running=RunStatus.RUNNING.value,
                    queued=RunStatus.QUEUED.value,
                    retrying=RunStatus.RETRYING.value,
                    zero=0,
                    one=1,
                    owner=owner,
                    lu=iso(lease_until),
                    lu_ms=to_ms(lease_until),
                    now=iso(now),
                    now_ms=to_ms(now),
                    late=lateness,
                ),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"]
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            item: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if not item:
                return Lease(LeaseOutcome.MISSING, None)
            current = run_from_attrs(deserialize(item))
            if current.status.terminal:
                return Lease(LeaseOutcome.TERMINAL, current, current.status)
            if current.status is RunStatus.RETRYING:
                return Lease(LeaseOutcome.EARLY, current, current.status)
            return Lease(LeaseOutcome.BUSY, current, current.status)
        old = run_from_attrs(deserialize(old_raw))
        run = old.model_copy(
            update={
                "status": RunStatus.RUNNING,
                "attempts": old.attempts + 1,
                "started_at": old.started_at or now,
                "lateness_ms": old.lateness_ms if old.lateness_ms is not None else lateness,
                "lease_until": lease_until,
                "not_before": None,
            }
        )
        return Lease(LeaseOutcome.LEASED, run, old.status, lease_until)

    def extend_lease(self, run_id: str, *, owner: str, lease_until: datetime) -> bool:
        return self._update_if(
            run_key(run_id),
            "SET lease_until = :lu, lease_until_ms = :lu_ms",
            "lease_owner = :owner AND #status = :running",
            {"#status": "status"},
            expression_values(
                lu=iso(lease_until), lu_ms=to_ms(lease_until), owner=owner, running=RunStatus.RUNNING.value
            ),
        )

    def finish_run(
        self,
        run: Run,
        *,
        owner: str,
        status: RunStatus,
        now: datetime,
        result: RunResult | None = None,
        error: RunError | None = None,
        skip_reason: SkipReason | None = None,
        duration_ms: int | None = None,
        not_before: datetime | None = None,
        resend_at: datetime | None = None,
    ) -> bool:
        """Leave RUNNING: SUCCEEDED, RETRYING, FAILED or SKIPPED, only while holding the lease.

        A RETRYING run records `not_before` (its next attempt's earliest start, which the lease enforces) and
        goes back into the due index at `resend_at`: when its backoff rides on a message, that is a safety net
        (the tick re-sends it if the message never came back); when the backoff is too long for a message,
        that is the retry itself."""
        sets = ["#status = :status"]
        values: dict[str, Any] = {"status": status.value, "owner": owner, "running": RunStatus.RUNNING.value}
        removes = ["lease_owner", "lease_until", "lease_until_ms"]
        if status.terminal:
            sets += ["finished_at = :now", "expires_at = :exp"]
            values.update(now=iso(now), exp=self._expiry(now))
        if duration_ms is not None:
            sets.append("duration_ms = :dur")
            values["dur"] = duration_ms
        if result is not None:
            sets.append("#result = :result")
            values["result"] = result.model_dump(mode="json")
        if error is not None:
            sets.append("#error = :error")
            values["error"] = error.model_dump(mode="json")
        elif status is RunStatus.SUCCEEDED:
            removes.append("#error")
        if skip_reason is not None:
            sets.append("skip_reason = :reason")
            values["reason"] = skip_reason.value
        if not_before is not None:
            sets += ["not_before = :nb", "not_before_ms = :nb_ms"]
            values.update(nb=iso(not_before), nb_ms=to_ms(not_before))
        if resend_at is not None:
            sets += ["due_shard = :shard", "due_at = :due"]
            values.update(shard=shard_of(run.job_id, self.shards), due=to_ms(resend_at))
        if status is RunStatus.FAILED:
            # Sparse entry in the tenant index: GET /v1/dlq lists these newest first.
            sets += ["tenant_key = :tk", "tenant_sort = :ts"]
            values.update(tk=f"T#{run.tenant}#FAILED", ts=f"{to_ms(now):013d}#{run.id}")
        expression = "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes)
        names = {"#status": "status"}
        if "#result" in expression:
            names["#result"] = "result"
        if "#error" in expression:
            names["#error"] = "error"
        return self._update_if(
            run_key(run.id),
            expression,
            "lease_owner = :owner AND #status = :running",
            names,
            expression_values(**values),
        )

    def requeue_failed_run(self, run: Run, *, now: datetime, redispatch_at: datetime) -> bool:
        """FAILED -> QUEUED with attempts starting again (retry and DLQ redrive): a new execution, so its start,
        lateness and duration are measured afresh; `requeues` counts how often this happened."""
        return self._update_if(
            run_key(run.id),
            "SET #status = :queued, attempts = :zero, enqueued_at = :now, due_shard = :shard, due_at = :due, "
            "requeues = if_not_exists(requeues, :zero) + :one "
            "REMOVE #error, finished_at, expires_at, tenant_key, tenant_sort, lease_owner, lease_until, "
            "lease_until_ms, started_at, lateness_ms, duration_ms, not_before, not_before_ms",
            "#status = :failed",
            {"#status": "status", "#error": "error"},
            expression_values(
                queued=RunStatus.QUEUED.value,
                failed=RunStatus.FAILED.value,
                zero=0,
                one=1,
                now=iso(now),
                shard=shard_of(run.job_id, self.shards),
                due=to_ms(redispatch_at),
            ),
        )

    def runs_of_job(
        self,
        job_id: str,
        *,
        limit: int = 50,
        start_key: dict[str, Any] | None = None,
        status: RunStatus | None = None,
    ) -> tuple[list[Run], dict[str, Any] | None]:
        """A job's runs, newest first, one page."""
        kwargs: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :run)",
            "ExpressionAttributeValues": expression_values(pk=f"JOB#{job_id}", run="RUN#"),
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if status is not None:
            kwargs["FilterExpression"] = "#status = :status"
            kwargs["ExpressionAttributeNames"] = {"#status": "status"}
            kwargs["ExpressionAttributeValues"].update(expression_values(status=status.value))
        if start_key:
            kwargs["ExclusiveStartKey"] = start_key
        page = self._db.query(**kwargs)
        return [run_from_attrs(deserialize(i)) for i in page.get("Items", [])], page.get("LastEvaluatedKey")

    # ------------------------------------------------------------ conditional writes (the one place)

    def _expiry(self, now: datetime) -> int:
        return int((now + self.retention).timestamp())

    def _put_if_absent(self, item: dict[str, Any], *, return_old: bool = True) -> tuple[bool, dict[str, Any]]:
        """PutItem only where no item has this key. Returns (won, the existing item's attributes if lost)."""
        kwargs: dict[str, Any] = {"ReturnValuesOnConditionCheckFailure": "ALL_OLD"} if return_old else {}
        try:
            self._db.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(pk)", **kwargs)
        except ClientError as exc:
            if not _is_condition_failure(exc):
                raise
            return False, deserialize(exc.response.get("Item") or {})  # type: ignore[arg-type]
        return True, {}

    def _put_if(
        self, item: dict[str, Any], condition: str, names: dict[str, str] | None, values: dict[str, Any]
    ) -> bool:
        """PutItem under a condition; False (never an exception) when the condition does not hold."""
        return self._conditional(
            self._db.put_item, names, Item=item, ConditionExpression=condition, ExpressionAttributeValues=values
        )

    def _update_if(
        self,
        key: dict[str, Any],
        update: str,
        condition: str,
        names: dict[str, str] | None,
        values: dict[str, Any],
    ) -> bool:
        """UpdateItem under a condition; False (never an exception) when the condition does not hold."""
        return self._conditional(
            self._db.update_item,
            names,
            Key=key,
            UpdateExpression=update,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
        )

    def _conditional(self, write: Any, names: dict[str, str] | None, **params: Any) -> bool:
        """The one place a conditional write's outcome is read: True if it won, False if its condition failed."""
        if names:
            params["ExpressionAttributeNames"] = names
        try:
            write(TableName=self.table, **params)
        except ClientError as exc:
            if _is_condition_failure(exc):
                return False
            raise
        return True


def _is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"
