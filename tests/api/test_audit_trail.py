"""The audit trail (docs/security.md "Audit trail"): each change through the API writes exactly one record, naming
its actor, and a read writes none. Walked over the OpenAPI document's operations, so a new route is covered (or
this fails until it is)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError
from tickwork.faults import CrashPoint
from tickwork.model.clock import iso
from tickwork.store.audit import record_of
from tickwork.store.codec import deserialize

from benchmarks.common import item_size
from tests.api.conftest import ACME, GLOBEX, ApiClient, role_identity
from tests.faults.crashes import ProcessKilled
from tests.harness import START

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ADMIN = role_identity("tickwork-admin", session="ops")
ACME_ACTOR = "tickwork-tenant-acme/alice"
ADMIN_TENANT = "123456789012:role/tickwork-admin"
ADMIN_ACTOR = "tickwork-admin/ops"
JOB: dict[str, Any] = {"name": "audited", "type": "echo", "schedule": {"rate": "1 day"}}
WITH_VARIANT: dict[str, Any] = {**JOB, "variants": [{"name": "v2", "weight": 10, "payload": {"v": 2}}]}
FAILING: dict[str, Any] = {**JOB, "payload": {"fail_attempts": 9}, "retry": {"max_attempts": 1}}
WORKFLOW: dict[str, Any] = {
    "name": "audited",
    "schedule": {"cron": "0 2 * * *"},
    "steps": [{"id": "a", "type": "echo"}],
    "retry": {"max_attempts": 1},
}
CALENDAR: dict[str, Any] = {"name": "holidays", "mode": "exclude", "windows": [{"dates": ["2030-12-25"]}]}
FREEZE: dict[str, Any] = {"selector": {"tags": {"team": "payments"}}, "for_seconds": 1800, "reason": "deploy"}


@dataclass
class Call:
    """A request, and the audit record it must write."""

    method: str
    path: str
    action: str
    body: Any = None
    identity: dict[str, Any] = field(default_factory=lambda: ACME)
    tenant: str = "acme"  # whose records it is among
    actor: str = ACME_ACTOR

    def send(self, api: ApiClient) -> Any:
        return api.request(self.method, self.path, body=self.body, identity=self.identity)


def audit_items(pipeline: Any) -> list[dict[str, Any]]:
    """Every audit record in the table (a test's scan; not a redrive's intent, which is not a record)."""
    pages = pipeline.services.store.shared_table.client.get_paginator("scan").paginate(
        TableName=pipeline.resources.table_name,
        FilterExpression="begins_with(pk, :audit) AND kind = :record",
        ExpressionAttributeValues={":audit": {"S": "AUDIT#"}, ":record": {"S": "AUDIT"}},
    )
    return [stored_record_json(item) for page in pages for item in page["Items"]]


def stored_record_json(item: dict[str, Any]) -> dict[str, Any]:
    """An audit item's record, as the API shows it (the item keeps it compressed)."""
    return json.loads(record_of(deserialize(item)).model_dump_json())


def created(api: ApiClient, path: str, body: dict[str, Any], identity: dict[str, Any] = ACME) -> dict[str, Any]:
    reply = api.post(path, body, identity=identity)
    assert reply.status in (201, 202), reply.text
    return reply.json


def failed_run(api: ApiClient, pipeline: Any, **job: Any) -> dict[str, Any]:
    made = created(api, "/v1/jobs", {**FAILING, **job})
    run = created(api, f"/v1/jobs/{made['id']}/trigger", {})
    pipeline.drain()
    assert api.get(f"/v1/runs/{run['id']}").json["status"] == "FAILED"
    return run


def running_run(api: ApiClient, pipeline: Any) -> dict[str, Any]:
    run = created(api, f"/v1/jobs/{created(api, '/v1/jobs', JOB)['id']}/trigger", {})
    now = pipeline.clock.now()
    pipeline.services.store.leases.lease_run(run["id"], owner="busy", now=now, lease_for=timedelta(seconds=60))
    return run


def failed_workflow_run(api: ApiClient, pipeline: Any) -> dict[str, Any]:
    steps = [{"id": "a", "type": "echo", "payload": {"fail_attempts": 9}}]
    workflow = created(api, "/v1/workflows", {**WORKFLOW, "steps": steps})
    run = created(api, f"/v1/workflows/{workflow['id']}/trigger", {})
    pipeline.drain()
    return run


def running_workflow_run(api: ApiClient) -> dict[str, Any]:
    return created(api, f"/v1/workflows/{created(api, '/v1/workflows', WORKFLOW)['id']}/trigger", {})


def paused(api: ApiClient, kind: str) -> dict[str, Any]:
    made = created(api, f"/v1/{kind}", JOB if kind == "jobs" else WORKFLOW)
    assert api.post(f"/v1/{kind}/{made['id']}/pause").status == 200
    return made


# Each mutating operation of the document: how to make one that succeeds (the setup's own changes are counted
# before it), and the record it must write.
MUTATIONS: dict[tuple[str, str], Callable[[ApiClient, Any], Call]] = {
    ("post", "/v1/jobs"): lambda api, p: Call("POST", "/v1/jobs", "job.create", JOB),
    ("post", "/v1/bulk/jobs/create"): lambda api, p: Call(
        "POST", "/v1/bulk/jobs/create", "job.create", {"jobs": [JOB]}
    ),
    ("post", "/v1/jobs/{job_id}/variants/{name}/promote"): lambda api, p: Call(
        "POST", f"/v1/jobs/{created(api, '/v1/jobs', WITH_VARIANT)['id']}/variants/v2/promote", "job.variant_promote"
    ),
    ("post", "/v1/jobs/{job_id}/variants/{name}/rollback"): lambda api, p: Call(
        "POST", f"/v1/jobs/{created(api, '/v1/jobs', WITH_VARIANT)['id']}/variants/v2/rollback", "job.variant_rollback"
    ),
    ("patch", "/v1/jobs/{job_id}"): lambda api, p: Call(
        "PATCH", f"/v1/jobs/{created(api, '/v1/jobs', JOB)['id']}", "job.update", {"priority": 7}
    ),
    ("delete", "/v1/jobs/{job_id}"): lambda api, p: Call(
        "DELETE", f"/v1/jobs/{created(api, '/v1/jobs', JOB)['id']}", "job.cancel"
    ),
    ("post", "/v1/jobs/{job_id}/trigger"): lambda api, p: Call(
        "POST", f"/v1/jobs/{created(api, '/v1/jobs', JOB)['id']}/trigger", "job.trigger"
    ),
    ("post", "/v1/jobs/{job_id}/pause"): lambda api, p: Call(
        "POST", f"/v1/jobs/{created(api, '/v1/jobs', JOB)['id']}/pause", "job.pause"
    ),
    ("post", "/v1/jobs/{job_id}/resume"): lambda api, p: Call(
        "POST", f"/v1/jobs/{paused(api, 'jobs')['id']}/resume", "job.resume"
    ),
    ("post", "/v1/jobs/{job_id}/backfill"): lambda api, p: Call(
        "POST",
        f"/v1/jobs/{created(api, '/v1/jobs', {**JOB, 'schedule': {'cron': '0 * * * *'}})['id']}/backfill",
        "job.backfill",
        {"from": iso(START - timedelta(hours=3)), "to": iso(START), "max_runs": 10},
    ),
    ("post", "/v1/runs/{run_id}/cancel"): lambda api, p: Call(
        "POST", f"/v1/runs/{running_run(api, p)['id']}/cancel", "run.cancel"
    ),
    ("post", "/v1/runs/{run_id}/skip"): lambda api, p: Call(
        "POST", f"/v1/runs/{failed_run(api, p, ordering={'key': 'ledger'})['id']}/skip", "run.skip"
    ),
    ("post", "/v1/runs/{run_id}/retry"): lambda api, p: Call(
        "POST", f"/v1/runs/{failed_run(api, p)['id']}/retry", "run.retry"
    ),
    ("post", "/v1/dlq/redrive"): lambda api, p: Call(
        "POST", "/v1/dlq/redrive", "run.redrive", {"run_ids": [failed_run(api, p)["id"]]}
    ),
    ("post", "/v1/bulk/jobs"): lambda api, p: Call(
        "POST",
        "/v1/bulk/jobs",
        "job.pause",
        {"action": "pause", "selector": {"job_ids": [created(api, "/v1/jobs", JOB)["id"]]}},
    ),
    ("post", "/v1/bulk/runs"): lambda api, p: Call(
        "POST", "/v1/bulk/runs", "run.retry", {"action": "retry", "run_ids": [failed_run(api, p)["id"]]}
    ),
    ("post", "/v1/dlq/{run_id}/dismiss"): lambda api, p: Call(
        "POST", f"/v1/dlq/{failed_run(api, p)['id']}/dismiss", "run.dismiss"
    ),
    ("post", "/v1/dead-letters/redrive"): lambda api, p: (
        p.sqs.send_message(QueueUrl=p.resources.dlq_urls["low"], MessageBody="poison"),
        Call(
            "POST",
            "/v1/dead-letters/redrive",
            "dead_letters.redrive",
            {"bands": ["low"]},
            ADMIN,
            ADMIN_TENANT,
            ADMIN_ACTOR,
        ),
    )[1],
    ("post", "/v1/workflows"): lambda api, p: Call("POST", "/v1/workflows", "workflow.create", WORKFLOW),
    ("patch", "/v1/workflows/{workflow_id}"): lambda api, p: Call(
        "PATCH", f"/v1/workflows/{created(api, '/v1/workflows', WORKFLOW)['id']}", "workflow.update", {"priority": 7}
    ),
    ("delete", "/v1/workflows/{workflow_id}"): lambda api, p: Call(
        "DELETE", f"/v1/workflows/{created(api, '/v1/workflows', WORKFLOW)['id']}", "workflow.cancel"
    ),
    ("post", "/v1/workflows/{workflow_id}/pause"): lambda api, p: Call(
        "POST", f"/v1/workflows/{created(api, '/v1/workflows', WORKFLOW)['id']}/pause", "workflow.pause"
    ),
    ("post", "/v1/workflows/{workflow_id}/resume"): lambda api, p: Call(
        "POST", f"/v1/workflows/{paused(api, 'workflows')['id']}/resume", "workflow.resume"
    ),
    ("post", "/v1/workflows/{workflow_id}/trigger"): lambda api, p: Call(
        "POST", f"/v1/workflows/{created(api, '/v1/workflows', WORKFLOW)['id']}/trigger", "workflow.trigger"
    ),
    ("post", "/v1/workflow-runs/{workflow_run_id}/retry"): lambda api, p: Call(
        "POST", f"/v1/workflow-runs/{failed_workflow_run(api, p)['id']}/retry", "workflow_run.retry"
    ),
    ("post", "/v1/workflow-runs/{workflow_run_id}/cancel"): lambda api, p: Call(
        "POST", f"/v1/workflow-runs/{running_workflow_run(api)['id']}/cancel", "workflow_run.cancel"
    ),
    ("put", "/v1/tenants/{tenant}"): lambda api, p: Call(
        "PUT", "/v1/tenants/acme", "tenant.settings", {"weight": 2}, ADMIN, "acme", ADMIN_ACTOR
    ),
    ("post", "/v1/calendars"): lambda api, p: Call("POST", "/v1/calendars", "calendar.create", CALENDAR),
    ("put", "/v1/calendars/{calendar_id}"): lambda api, p: Call(
        "PUT",
        f"/v1/calendars/{created(api, '/v1/calendars', CALENDAR)['id']}",
        "calendar.replace",
        {**CALENDAR, "name": "renamed"},
    ),
    ("delete", "/v1/calendars/{calendar_id}"): lambda api, p: Call(
        "DELETE", f"/v1/calendars/{created(api, '/v1/calendars', CALENDAR)['id']}", "calendar.delete"
    ),
    ("post", "/v1/freezes"): lambda api, p: Call("POST", "/v1/freezes", "freeze.create", FREEZE),
    ("delete", "/v1/freezes/{freeze_id}"): lambda api, p: Call(
        "DELETE", f"/v1/freezes/{created(api, '/v1/freezes', FREEZE)['id']}", "freeze.lift"
    ),
}
READS_BY_POST = {("post", "/v1/schedules/preview")}  # a computation on its body: it changes nothing
# Changes walked where their stack can make them: a failover needs RegionMode eventual (tests/api/test_region_routes.py
# checks its one record and its actor).
AUDITED_ELSEWHERE = {("post", "/v1/regions/failover")}

# Operations sent another way than MUTATIONS sends them (another body): each writes its one record too.
VARIANTS: dict[tuple[str, ...], Callable[[ApiClient, Any], Call]] = {
    ("post", "/v1/runs/{run_id}/retry", "with a payload"): lambda api, p: Call(
        "POST", f"/v1/runs/{failed_run(api, p)['id']}/retry", "run.retry", {"payload": {"fail_attempts": 0}}
    ),
    ("post", "/v1/dlq/redrive", "every FAILED run"): lambda api, p: (
        failed_run(api, p),
        Call("POST", "/v1/dlq/redrive", "run.redrive", {"all": True}),
    )[1],
    ("post", "/v1/bulk/jobs", "resume"): lambda api, p: Call(
        "POST",
        "/v1/bulk/jobs",
        "job.resume",
        {"action": "resume", "selector": {"job_ids": [paused(api, "jobs")["id"]]}},
    ),
}
CALLS: dict[tuple[str, ...], Callable[[ApiClient, Any], Call]] = {**MUTATIONS, **VARIANTS}


def case_id(operation: tuple[str, ...]) -> str:
    return " ".join([operation[0].upper(), *operation[1:]])


def operations(api: ApiClient) -> set[tuple[str, str]]:
    paths = json.loads(api.get("/v1/openapi.json").text)["paths"]
    return {(method, path) for path, item in paths.items() for method in item if method != "parameters"}


def test_every_mutating_operation_of_the_document_is_walked(api: ApiClient) -> None:
    mutating = {(m, p) for m, p in operations(api) if m != "get"} - READS_BY_POST - AUDITED_ELSEWHERE
    assert mutating == set(MUTATIONS)


@pytest.mark.parametrize("operation", sorted(CALLS), ids=case_id)
def test_each_change_writes_exactly_one_record_naming_its_actor(api: ApiClient, pipeline: Any, operation) -> None:
    call = CALLS[operation](api, pipeline)
    before = {r["id"] for r in audit_items(pipeline)}
    reply = call.send(api)
    assert reply.status < 300, reply.text
    new = [r for r in audit_items(pipeline) if r["id"] not in before]
    assert [r["action"] for r in new] == [call.action]
    (record,) = new
    assert record["actor"]["kind"] == "iam"
    assert record["actor"]["display"] == call.actor
    assert record["actor"]["id"] == call.identity["userArn"]
    assert record["tenant"] == call.tenant
    assert record["request_id"]
    assert record["source_ip"]
    assert record["outcome"] == "succeeded"


def test_no_read_writes_a_record(api: ApiClient, pipeline: Any) -> None:
    job = created(api, "/v1/jobs", JOB)
    ids = {
        "job_id": job["id"],
        "run_id": created(api, f"/v1/jobs/{job['id']}/trigger", {})["id"],
        "workflow_id": (workflow := created(api, "/v1/workflows", WORKFLOW))["id"],
        "workflow_run_id": created(api, f"/v1/workflows/{workflow['id']}/trigger", {})["id"],
        "calendar_id": created(api, "/v1/calendars", CALENDAR)["id"],
        "freeze_id": created(api, "/v1/freezes", FREEZE)["id"],
        "tenant": "acme",
    }
    before = audit_items(pipeline)
    reads = sorted({(m, p) for m, p in operations(api) if m == "get"} | READS_BY_POST)
    for method, path in reads:
        identity = ADMIN if path.startswith(("/v1/tenants/", "/v1/dead-letters")) else ACME
        body = {"schedule": {"rate": "1 hour"}} if method == "post" else None
        reply = api.request(method.upper(), path.format(**ids), body=body, identity=identity)
        assert reply.status < 500, (path, reply.text)
    assert audit_items(pipeline) == before
    assert len(reads) > 20


def test_a_tenant_reads_its_own_records_and_is_refused_anothers(api: ApiClient) -> None:
    mine = created(api, "/v1/jobs", JOB)
    theirs = created(api, "/v1/jobs", JOB, identity=GLOBEX)
    own = api.get("/v1/audit").json["items"]
    assert [(r["action"], r["resource"]["id"]) for r in own] == [("job.create", mine["id"])]
    assert api.get("/v1/audit", identity=GLOBEX).json["items"][0]["resource"]["id"] == theirs["id"]
    refused = api.get("/v1/audit", query={"tenant": "globex"})
    assert refused.status == 403
    assert "admin" in refused.json["detail"]
    everyone = api.get("/v1/audit", identity=ADMIN).json["items"]
    assert {r["resource"]["id"] for r in everyone} == {mine["id"], theirs["id"]}
    one = api.get("/v1/audit", query={"tenant": "globex"}, identity=ADMIN).json["items"]
    assert [r["resource"]["id"] for r in one] == [theirs["id"]]


def test_a_creates_record_fits_its_item_in_one_kb_and_reads_as_the_api_showed_it(api: ApiClient, pipeline: Any) -> None:
    """Its item holds the record without its absent values, compressed: its transaction bills 2 WRU, not 4. The API
    answers every field as it did: each `before` null, a null inside a value kept."""
    job = created(api, "/v1/jobs", {**JOB, "payload": {"kept": None, "n": [1, None]}})
    (item,) = [i for k, i in table_items(pipeline).items() if k[0].startswith("AUDIT#")]
    assert item_size(item) <= 768  # room for a longer caller's ARN and user agent under 1 KB
    (record,) = api.get("/v1/audit").json["items"]
    assert record["changes"]["payload"] == {"before": None, "after": {"kept": None, "n": [1, None]}}
    assert record["changes"]["name"] == {"before": None, "after": "audited"}
    assert all(change["before"] is None for change in record["changes"].values())
    assert len(record["changes"]) > 20  # the job's every field
    assert record["resource"] == {"kind": "job", "id": job["id"]}
    assert stored_record_json(item) == record


def test_a_pause_is_recorded_with_what_changed_and_the_job_shows_who(api: ApiClient, pipeline: Any) -> None:
    job = created(api, "/v1/jobs", JOB)
    pipeline.clock.advance(1)  # records of one millisecond have no order among them
    assert api.post(f"/v1/jobs/{job['id']}/pause").status == 200
    api.post(f"/v1/jobs/{job['id']}/pause")  # already paused: no change, no record
    records = api.get("/v1/audit").json["items"]
    assert [r["action"] for r in records] == ["job.pause", "job.create"]
    assert records[0]["changes"]["state"] == {"before": "ACTIVE", "after": "PAUSED"}
    assert records[0]["changes"]["paused_by"] == {"before": None, "after": ACME_ACTOR}
    shown = api.get(f"/v1/jobs/{job['id']}").json
    assert shown["created_by"] == shown["updated_by"] == shown["paused_by"] == ACME_ACTOR
    assert job["paused_by"] is None


def test_the_listing_filters_by_resource_actor_action_and_time(api: ApiClient, pipeline: Any) -> None:
    first = created(api, "/v1/jobs", JOB)
    pipeline.clock.advance(60)
    second = created(api, "/v1/jobs", JOB)
    pipeline.clock.advance(1)  # records of one millisecond have no order among them
    api.post(f"/v1/jobs/{second['id']}/pause")

    def ids(**query: Any) -> list[tuple[str, str]]:
        reply = api.get("/v1/audit", query=query)
        assert reply.status == 200, reply.text
        return [(r["action"], r["resource"]["id"]) for r in reply.json["items"]]

    assert ids(resource=first["id"]) == [("job.create", first["id"])]
    assert ids(action="job.pause") == [("job.pause", second["id"])]
    assert len(ids(actor=ACME_ACTOR)) == len(ids(actor=ACME["userArn"])) == 3
    assert ids(actor="someone else") == []
    assert ids(to=iso(START + timedelta(seconds=30))) == [("job.create", first["id"])]
    page = api.get("/v1/audit", query={"limit": 2}).json
    rest = api.get("/v1/audit", query={"limit": 2, "cursor": page["next_cursor"]}).json
    assert [r["resource"]["id"] for r in page["items"] + rest["items"]] == [second["id"], second["id"], first["id"]]
    assert rest["next_cursor"] is None
    # An admin's view of every tenant filters the records it reads: its pages may come out short.
    everyone = api.get("/v1/audit", query={"action": "job.pause", "limit": 1}, identity=ADMIN).json
    assert [r["resource"]["id"] for r in everyone["items"]] == [second["id"]]
    assert everyone["next_cursor"] is not None
    rest = api.get("/v1/audit", query={"action": "job.pause", "cursor": everyone["next_cursor"]}, identity=ADMIN)
    assert rest.json == {"items": [], "next_cursor": None}


class TransactionFails:
    """The table's client, but its TransactWriteItems fail: `refused` (DynamoDB answers an error and writes
    nothing) or `dies_after` (written, then the process dies before it hears back). Records what it was asked."""

    def __init__(self, client: Any, *, dies_after: bool) -> None:
        self._client = client
        self.dies_after = dies_after
        self.asked: list[list[dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def transact_write_items(self, **params: Any) -> Any:
        self.asked.append(params["TransactItems"])
        if self.dies_after:
            self._client.transact_write_items(**params)
            raise ProcessKilled("after the transaction")
        error = {"Error": {"Code": "InternalServerError", "Message": "injected"}}
        raise ClientError(error, "TransactWriteItems")  # type: ignore[arg-type]


@contextmanager
def transactions_failing(pipeline: Any, *, dies_after: bool) -> Iterator[TransactionFails]:
    """The store's client, for the block, one whose transactions fail (TransactionFails)."""
    store = pipeline.services.store
    failing = TransactionFails(store._db, dies_after=dies_after)
    store._db = failing
    try:
        yield failing
    finally:
        store._db = failing._client


def table_items(pipeline: Any) -> dict[tuple[str, str], dict[str, Any]]:
    pages = pipeline.services.store.shared_table.client.get_paginator("scan").paginate(
        TableName=pipeline.resources.table_name
    )
    return {(i["pk"]["S"], i["sk"]["S"]): i for page in pages for i in page["Items"]}


def changed_key(transaction: list[dict[str, Any]]) -> tuple[str, str]:
    """The key of the change a transaction makes (its first item; the second is its audit record's put)."""
    ((_, change),) = transaction[0].items()
    key = change.get("Key") or change["Item"]
    return key["pk"]["S"], key["sk"]["S"]


# Writes nothing to the table (SQS's message move task): its record is an intent written before it and confirmed
# after (docs/security.md), each crash point of which tests/integration/test_redrive_audit_outbox.py walks.
RECORDED_AFTER = {("post", "/v1/dead-letters/redrive")}
IN_A_TRANSACTION = sorted(set(CALLS) - RECORDED_AFTER)


@pytest.mark.parametrize("operation", IN_A_TRANSACTION, ids=case_id)
def test_a_change_whose_transaction_fails_writes_neither_it_nor_its_record(api, pipeline, operation) -> None:
    call = CALLS[operation](api, pipeline)
    before = table_items(pipeline)
    with transactions_failing(pipeline, dies_after=False) as failing:
        reply = call.send(api)
    assert reply.status == 500, reply.text
    assert failing.asked, "the change was not made in a transaction"
    after = table_items(pipeline)
    assert not [key for key in after.keys() - before.keys() if key[0].startswith("AUDIT#")]
    for transaction in failing.asked:
        key = changed_key(transaction)
        assert after.get(key) == before.get(key), f"{key} changed without its record"


@pytest.mark.parametrize("operation", IN_A_TRANSACTION, ids=case_id)
def test_a_process_that_dies_after_the_transaction_leaves_both_the_change_and_its_record(
    api, pipeline, operation
) -> None:
    call = CALLS[operation](api, pipeline)
    before = table_items(pipeline)
    with transactions_failing(pipeline, dies_after=True) as dying, pytest.raises(ProcessKilled):
        call.send(api)
    (transaction,) = dying.asked
    after = table_items(pipeline)
    new_records = [stored_record_json(after[k]) for k in after.keys() - before.keys() if k[0].startswith("AUDIT#")]
    assert [r["action"] for r in new_records] == [call.action]
    assert after.get(changed_key(transaction)) != before.get(changed_key(transaction))


def test_a_debounced_trigger_writes_one_record_whether_it_opens_or_joins_its_window(api, pipeline) -> None:
    job = created(api, "/v1/jobs", JOB)
    body = {"debounce": {"key": "k", "seconds": 60}}
    for verdict in ("started", "joined"):
        before = {r["id"] for r in audit_items(pipeline)}
        run = created(api, f"/v1/jobs/{job['id']}/trigger", body)
        assert run["debounce_window"] == verdict
        new = [r for r in audit_items(pipeline) if r["id"] not in before]
        assert [(r["action"], r["resource"]["id"]) for r in new] == [("job.trigger", run["id"])]


@pytest.mark.parametrize("operation", [("post", "/v1/runs/{run_id}/cancel"), ("post", "/v1/runs/{run_id}/skip")])
def test_asking_again_what_was_asked_already_changes_nothing_and_records_nothing(api, pipeline, operation) -> None:
    call = MUTATIONS[operation](api, pipeline)
    assert call.send(api).status < 300
    before = audit_items(pipeline)
    again = call.send(api)
    assert again.status < 300, again.text
    assert audit_items(pipeline) == before


def test_a_redrive_whose_request_died_before_its_confirm_is_not_listed_while_pending(api, pipeline) -> None:
    """Its record is an intent until confirmed (by the tick: tests/integration/test_redrive_audit_outbox.py): the
    listing shows changes known to have happened, so neither a tenant's view nor an admin's shows it."""
    pipeline.sqs.send_message(QueueUrl=pipeline.resources.dlq_urls["low"], MessageBody="poison")
    pipeline.crashes.arm(CrashPoint.REDRIVE_AFTER_MOVE)
    with pytest.raises(ProcessKilled):
        api.post("/v1/dead-letters/redrive", {"bands": ["low"]}, identity=ADMIN)
    for query in ({}, {"tenant": "*"}, {"tenant": ADMIN_TENANT}, {"action": "dead_letters.redrive"}):
        reply = api.get("/v1/audit", query=query, identity=ADMIN)
        assert (reply.status, reply.json["items"]) == (200, []), query
