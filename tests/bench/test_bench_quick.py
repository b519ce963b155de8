"""The quick benchmark's deterministic half, as tests: request counts and capacity units, never timings.

`make bench-quick` prints the same sections with timings. These tests fail when a change adds AWS requests
or write units to a run, or makes a tick's requests grow with the jobs stored rather than the jobs due.
The budgets below are today's measured counts (docs/benchmarks.md, section 1): lower them as the cuts
described there land. The issue's goal is 5 billable requests and 4 WRU per run.
"""

from __future__ import annotations

from typing import Any

import pytest

# Per one-shot run, the run's own calls (the tick's per-tick queries and shard leases are checked apart).
RUN_CALL_BUDGET = {
    # create, as POST /v1/jobs makes it: the job's put and its audit record's, one transaction
    "dynamodb:TransactWriteItems job+audit": 1,
    "dynamodb:UpdateItem audit": 1,  # the tick's archive of that record: out of the due index, TTL set
    "dynamodb:PutItem run": 1,  # claim: the run record
    "dynamodb:UpdateItem job": 2,  # claim: advance the job; executor: complete the one-shot once settled
    "dynamodb:UpdateItem run": 2,  # executor: lease, finish
    # No GetItem of the job: the claim's advance returns it, and the run's message carries its copy (run_spec).
    "s3:PutObject": 2,  # the result; the create's audit record's archive object
    "sqs:SendMessageBatch": 0.1,  # batches of 10
    # executor: the messages follow their leases from before they are taken, a batch's in one request
    "sqs:ChangeMessageVisibilityBatch": 0.1,
    "sqs:ReceiveMessage": 0.1,
    "sqs:DeleteMessageBatch": 0.1,
    # Tenants' settings (weights and quotas: docs/fairness.md), read by the create's claim, the tick and the
    # executor, each kept 30 s per execution environment: one read per tenant per 30 s, not one per run; and the
    # tick's read of the audit records it archives, 100 a request.
    "dynamodb:BatchGetItem": 0.1,
    # The tenant made known by its first create in an execution environment (KnownTenants: an admin's `tenant=*`
    # reads each known tenant's): once per tenant per environment, not per run; 1/40 here, one tenant's 40 runs.
    "dynamodb:PutItem tenants": 0.025,
}
# The run's own write units. 14 since a leased run keeps its due-index entry until its outcome (the safety net
# for a lapsed lease whose message is stranded): the outcome's write now also deletes that index entry. 13 since
# tenant-index projects only what its queries filter on: the claim's job update no longer rewrites its entry. 16
# since a run is in the runs-index (GET /v1/runs): its entry is written at each status, QUEUED, RUNNING, SUCCEEDED.
# 16.025 with the tenant made known once (1 WRU over the 40 runs), which more runs make as small as you like.
# 15.025 since the due index projects neither a run's status nor its lease: the lease no longer rewrites the entry.
# 22.025 once the create is measured as the API makes it, with its audit record in its transaction: a transactional
# write bills 2 WRU per KB of each item (the job's 2, its record's 2: 6 while the record took 2 KB), the record
# enters due-index (its archive's outbox) and tenant-index (an admin's listing), and the tick's archive marks it (2).
WRU_BUDGET = 22.025
# Per cron run (no create): the job's advance (1, and 2 in due-index: its key moves), the run's put (3), lease (2:
# table and runs-index) and outcome (3). 12 before the due index stopped projecting a run's status and lease.
CRON_WRU_BUDGET = 11
# Per workflow step run, diamond workflows (benchmarks/calls_per_step.py): the workflow's create, claim and
# completion are shared by its 4 steps; a step's end is recorded in its workflow run, and so is each plan.
STEP_CALL_BUDGET = {
    "dynamodb:TransactWriteItems workflow+audit": 0.25,  # create, with its audit record (as POST /v1/workflows)
    "dynamodb:UpdateItem audit": 0.25,  # the tick's archive of that record
    "dynamodb:GetItem workflow": 0.25,  # claim: the definition (the due index carries no steps)
    "dynamodb:PutItem workflow run": 0.25,  # claim: the lock on the occurrence
    "dynamodb:UpdateItem workflow": 0.5,  # claim: advance; the last occurrence's end: complete
    "dynamodb:PutItem step run": 1,  # its creation (the root's at the claim, the others' by an executor)
    "dynamodb:GetItem workflow run": 1,  # executor: the step's definition, from the run's snapshot
    "dynamodb:UpdateItem step run": 2,  # lease, finish
    "dynamodb:UpdateItem workflow run": 1.75,  # the step's end (1), the plans that follow (3 per diamond)
    "s3:PutObject": 1.25,  # the result; the workflow's audit record's archive object
    "s3:GetObject": 1,  # upstream results for $from (b, c: a's; d: b's and c's)
    "sqs:ChangeMessageVisibilityBatch": 0.15,  # a batch's visibility in one request
    "sqs:SendMessageBatch": 0.55,  # the roots at the tick; a's end sends b and c, c's (or b's) end sends d
    "sqs:ReceiveMessage": 0.15,
    "sqs:DeleteMessageBatch": 0.15,
    "dynamodb:BatchGetItem": 0.1,  # tenants' settings, as for a job's run
    "dynamodb:PutItem tenants": 0.0125,  # the tenant made known, once (one tenant's 20 workflows of 4 steps)
}
# Measured 13.55 (the workflow's claim leaves its tenant-index entry alone too); 15.75 with a step run's 3 runs-index
# writes (QUEUED, RUNNING, SUCCEEDED), less where its record's size no longer spills into a second KB.
# 17.3 with the workflow's create measured as the API makes it (its audit record in its transaction, and archived);
# 16.55 with the record compressed with a preset dictionary: under 1 KB, 2 WRU in the transaction instead of 4.
STEP_WRU_BUDGET = 16.55
SHARDS = 8  # template.yaml DueShards default
# A durable run's operations (benchmarks/calls_per_durable_op.py, docs/durable-runs.md), each exactly: its requests.
DURABLE_OP_BUDGET: dict[str, dict[str, int]] = {
    "checkpoint_inline": {"dynamodb:UpdateItem run": 1},  # one conditional write, fenced by the lease
    "checkpoint_s3": {"s3:PutObject": 1, "dynamodb:UpdateItem run": 1},  # the object, then the pointer
    # A checkpoint that supersedes one in S3 deletes its object once the item no longer points to it.
    "checkpoint_s3_after_s3": {"s3:PutObject": 1, "dynamodb:UpdateItem run": 1, "s3:DeleteObject": 1},
    "checkpoint_inline_after_s3": {"dynamodb:UpdateItem run": 1, "s3:DeleteObject": 1},
    "progress_written": {"dynamodb:UpdateItem run": 1},
    "progress_coalesced": {},  # waits for the next beat
    # A beat costs its lease extension and the message's visibility, with or without a report riding on it.
    "heartbeat_with_progress": {"dynamodb:UpdateItem run": 1, "sqs:ChangeMessageVisibility": 1},
    "heartbeat_alone": {"dynamodb:UpdateItem run": 1, "sqs:ChangeMessageVisibility": 1},
    # The yield's write and its fresh message (and the event source mapping's delete of the old one) ...
    "yield_end": {"dynamodb:UpdateItem run": 1, "sqs:SendMessageBatch": 1, "sqs:DeleteMessageBatch": 1},
    # ... then what any segment's start costs: the receive, the lease (with the message's visibility), the job's
    # read, and the tenants' settings (kept 30 s: the fake clock moved 40 s since the first segment's read). No
    # read of the freezes: a freeze stops a run's first start only (docs/operations.md, "Freezes").
    "yield_next_start": {
        "sqs:ReceiveMessage": 1,
        "sqs:ChangeMessageVisibility": 1,
        "dynamodb:UpdateItem run": 1,
        "dynamodb:GetItem job": 1,
        "dynamodb:BatchGetItem": 1,
    },
}


@pytest.fixture(scope="module")
def section1() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        _fake_credentials(mp)
        from benchmarks import calls_per_run
        from benchmarks.common import Stamp

        return calls_per_run.run(Stamp.now("pytest tests/bench"), quick=True)


@pytest.fixture(scope="module")
def section1b() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        _fake_credentials(mp)
        from benchmarks import calls_per_step
        from benchmarks.common import Stamp

        return calls_per_step.run(Stamp.now("pytest tests/bench"), quick=True)


@pytest.fixture(scope="module")
def section1c() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        _fake_credentials(mp)
        from benchmarks import calls_per_durable_op
        from benchmarks.common import Stamp

        return calls_per_durable_op.run(Stamp.now("pytest tests/bench"), quick=True)


@pytest.fixture(scope="module")
def section4() -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        _fake_credentials(mp)
        from benchmarks import idle_scaling
        from benchmarks.common import Stamp

        return idle_scaling.run(Stamp.now("pytest tests/bench"), quick=True)


def _fake_credentials(mp: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        mp.setenv(name, "testing")
    mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
    mp.delenv("AWS_ENDPOINT_URL", raising=False)
    mp.delenv("AWS_PROFILE", raising=False)


def test_a_jobs_forecast_adds_no_write_per_run_only_the_claims_query(section1: dict[str, Any]) -> None:
    """docs/forecasts.md: the claim's advance carries the forecast; its fold reads the job's ended runs once a claim
    (a once-a-minute job: once a run)."""
    forecasts = section1["forecasts"]
    assert forecasts["added_per_run"] == {"dynamodb:Query": 1.0}
    assert forecasts["added_wru_per_run"] == 0
    # 0.5 on a quiet machine: a Query of one eventually consistent page; more when a run is still open as the tick
    # passes (moto's DelaySeconds follow the wall clock), read again at the next claim.
    assert forecasts["added_rru_per_run"] <= 1.0
    assert forecasts["with"]["forecast_bytes"] < 640


def test_a_one_shot_run_makes_no_more_requests_than_budgeted(section1: dict[str, Any]) -> None:
    per_run = section1["scenarios"]["ahead"]["total"]["per_run"]
    calls = {op: n for op, n in per_run.items() if "(empty)" not in op}
    assert set(calls) <= set(RUN_CALL_BUDGET), f"new kinds of calls per run: {set(calls) - set(RUN_CALL_BUDGET)}"
    over = {op: n for op, n in calls.items() if n > RUN_CALL_BUDGET[op] + 1e-9}
    assert not over, f"more calls per run than budgeted: {over}"


def test_a_one_shot_run_writes_no_more_units_than_budgeted(section1: dict[str, Any]) -> None:
    billed = section1["billable"]["ahead"]
    assert billed["wru_per_run"] <= WRU_BUDGET
    # Every write carries the job's and the run's indexes as template.yaml defines them: the computed
    # units are at least one per write, two per item of a transaction.
    per_run = section1["scenarios"]["ahead"]["total"]["per_run"]
    writes = sum(n for op, n in per_run.items() if "Item " in op and "Get" not in op)
    transactional = sum(2 * 2 * n for op, n in per_run.items() if "TransactWriteItems" in op)
    assert billed["wru_per_run"] >= writes + transactional


def test_a_creates_transaction_bills_its_job_and_its_audit_record_one_kb_each(section1: dict[str, Any]) -> None:
    """2 WRU per started KB of each item (prepare and commit): the record, kept compressed without its absent
    values, fits 1 KB (6 while it took 2 KB); its index entries are billed as any write's."""
    wru = section1["scenarios"]["ahead"]["total"]["wru_per_run"]["dynamodb:TransactWriteItems job+audit"]
    assert wru["table"] == 4
    assert wru["due-index"] == 2  # the job's entry, the record's archive outbox entry
    assert wru["tenant-index"] == 2  # the job's, the record's for an admin's listing


def test_a_runs_due_index_entry_is_written_at_its_claim_and_its_outcome_only(section1: dict[str, Any]) -> None:
    """Not at its lease (nor a heartbeat): the index projects neither the run's status nor its lease."""
    wru = section1["scenarios"]["ahead"]["total"]["wru_per_run"]
    assert wru["dynamodb:PutItem run"]["due-index"] == 1  # the claim: the entry
    assert wru["dynamodb:UpdateItem run"]["due-index"] == 1  # lease 0, outcome 1: the entry deleted


def test_a_cron_run_writes_no_more_units_than_budgeted(section1: dict[str, Any]) -> None:
    cron = section1["scenarios"]["cron"]["total"]
    assert cron["per_run"]["dynamodb:UpdateItem run"] == 2  # lease, outcome
    assert "dynamodb:PutItem job" not in cron["per_run"]  # its create is not a run's
    assert section1["billable"]["cron"]["wru_per_run"] <= CRON_WRU_BUDGET


def test_a_tick_pays_one_query_per_shard_and_a_lease_per_busy_shard(section1: dict[str, Any]) -> None:
    phases = section1["scenarios"]["ahead"]["phases"]
    tick = phases["tick"]["per_tick_calls"]
    # 40 due jobs fit one page per shard; one Query of the freezes (docs/operations.md, "Freezes"), one of the
    # audit records waiting for their archive and one of the dead-letter redrives' audit intents waiting to be
    # settled (docs/security.md, "Audit trail")
    assert tick["dynamodb:Query"] == SHARDS + 3
    # The executor reads the freezes once per execution environment per 5 s, not once per run: one for the 40.
    assert phases["execute"]["per_tick_calls"]["dynamodb:Query"] == 1
    leases = tick.get("dynamodb:PutItem shard lease", 0)
    assert leases == tick.get("dynamodb:UpdateItem shard lease", 0) <= SHARDS


def test_a_job_due_soon_is_sent_alone_by_its_create(section1: dict[str, Any]) -> None:
    soon = section1["scenarios"]["soon"]
    assert soon["phases"]["create"]["per_run"]["sqs:SendMessageBatch"] == 1
    assert soon["tick_dispatched"] == 0


def test_a_ticks_requests_do_not_grow_with_stored_jobs(section4: dict[str, Any]) -> None:
    large, small = section4["large"], section4["small"]
    assert large["stored"] >= 10 * small["stored"]
    assert large["calls"] == small["calls"], (large["calls"], small["calls"])
    assert large["calls"]["Query"] == SHARDS + 2  # and the freezes' Query, and the audit archive's outbox's
    assert large["calls"]["SendMessageBatch"] == 10  # 100 runs, 10 to a batch


def test_a_workflow_step_run_makes_no_more_requests_than_budgeted(section1b: dict[str, Any]) -> None:
    per_run = section1b["total"]["per_run"]
    calls = {op: n for op, n in per_run.items() if "(empty)" not in op}
    assert set(calls) <= set(STEP_CALL_BUDGET), f"new kinds of calls per step: {set(calls) - set(STEP_CALL_BUDGET)}"
    over = {op: n for op, n in calls.items() if n > STEP_CALL_BUDGET[op] + 1e-9}
    assert not over, f"more calls per step run than budgeted: {over}"


def test_a_workflow_step_run_writes_no_more_units_than_budgeted(section1b: dict[str, Any]) -> None:
    assert section1b["billable"]["wru_per_run"] <= STEP_WRU_BUDGET


@pytest.mark.parametrize("operation", DURABLE_OP_BUDGET)
def test_a_durable_runs_operation_makes_the_requests_budgeted(section1c: dict[str, Any], operation: str) -> None:
    assert section1c["operations"][operation]["requests"] == DURABLE_OP_BUDGET[operation]


def test_a_progress_report_on_a_heartbeat_costs_what_the_beat_costs_anyway(section1c: dict[str, Any]) -> None:
    ops = section1c["operations"]
    assert ops["heartbeat_with_progress"]["wru"] == ops["heartbeat_alone"]["wru"]
    # A checkpoint in the run item, or a written report, is one write of the item: 1 WRU per started KB of it. This
    # example's record, with its 200-byte state and its runs-index keys, sits at 1 KB (its ids' and instants' lengths
    # and the report it holds put it on one side or the other): 1 or 2 each, a single write.
    assert {ops["checkpoint_inline"]["wru"], ops["progress_written"]["wru"]} <= {1, 2}
