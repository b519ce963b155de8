"""The audit trail in RegionMode strong (docs/regions.md section 2; an MRSC table has no transactions): every change
through the API writes the one record it writes in single mode, through an intent and its confirm
(tickwork.store.pending_audits), and no request is a TransactWriteItems. Walked over the same calls as
tests/api/test_audit_trail.py, in both modes."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.api.conftest import ACME, ApiClient
from tests.api.test_audit_trail import ADMIN, CALENDAR, CALLS, FREEZE, JOB, WORKFLOW, audit_items, table_items
from tests.faults.crashes import ProcessKilled
from tests.harness import Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
MARK = "audit_pending"


@pytest.fixture(params=["single", "strong"])
def pipeline(mocked_aws: None, request: pytest.FixtureRequest) -> Iterator[Any]:
    with Pipeline.create(REGION_MODE=request.param) as p:
        yield p


def test_every_change_writes_its_one_record_and_strong_sends_no_transaction(api: ApiClient, pipeline: Any) -> None:
    strong = pipeline.services.settings.region_mode == "strong"
    answers: list[str] = []
    for operation, call_of in sorted(CALLS.items()):
        call = call_of(api, pipeline)
        before = {r["id"] for r in audit_items(pipeline)}
        reply = call.send(api)
        assert reply.status < 300, (operation, reply.text)
        answers.append(reply.text)
        new = [r["action"] for r in audit_items(pipeline) if r["id"] not in before]
        # One record (the redrive of every FAILED run: one per run, and the walk has failed several by then).
        assert new == [call.action] or (operation[-1] == "every FAILED run" and set(new) == {call.action}), operation

    transactions = pipeline.calls.count("TransactWriteItems")
    assert (transactions == 0) if strong else (transactions > 0)
    intents = [p for p in pipeline.calls.params("PutItem") if p["Item"].get("kind") == {"S": "AUDIT_PENDING"}]
    assert (len(intents) >= len(CALLS)) if strong else not intents
    # The API deletes calendars and released idempotency keys only (its role's DeleteItem, template.yaml): a record
    # whose change did not happen is settled by an update.
    deleted = {p["Key"]["sk"]["S"].split("#")[0] for p in pipeline.calls.params("DeleteItem")}
    assert deleted <= {"CALENDAR", "IDEM"}
    items = table_items(pipeline).values()
    assert not [i for i in items if i.get("kind", {}).get("S") == "AUDIT_PENDING"]  # every intent confirmed
    assert not [i for i in items if "audit_pending" in i]  # and every mark cleared
    assert not [text for text in answers if "audit_pending" in text]
    listed = api.get("/v1/audit", query={"tenant": "*", "limit": 100}, identity=ADMIN).json["items"]
    assert len(listed) == len(audit_items(pipeline)) > len(CALLS)


@pytest.fixture
def strong_pipeline(mocked_aws: None) -> Iterator[Any]:
    with Pipeline.create(REGION_MODE="strong") as p:
        yield p


@pytest.fixture
def strong_api(strong_pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiClient]:
    from api import app as api_app

    monkeypatch.setenv("API_AUTH_MODE", "iam")
    api_app.use_services(strong_pipeline.services)
    try:
        yield ApiClient(strong_pipeline)
    finally:
        api_app.use_services(None)


@contextmanager
def dying_before_update(pipeline: Any, starting: str) -> Iterator[None]:
    """The request in the block dies as it is about to send an UpdateItem whose expression starts with `starting`
    (a botocore handler on the real client: it is never sent)."""
    client = pipeline.services.store.shared_table.client

    def die(params: dict[str, Any], **_: Any) -> None:
        if params.get("UpdateExpression", "").startswith(starting):
            raise ProcessKilled(f"before {starting}")

    client.meta.events.register("before-parameter-build.dynamodb.UpdateItem", die)
    try:
        with pytest.raises(ProcessKilled):
            yield
    finally:
        client.meta.events.unregister("before-parameter-build.dynamodb.UpdateItem", die)


CREATES = {
    "job": ("POST", "/v1/jobs", JOB, ACME),
    "workflow": ("POST", "/v1/workflows", WORKFLOW, ACME),
    "calendar": ("POST", "/v1/calendars", CALENDAR, ACME),
    "freeze": ("POST", "/v1/freezes", FREEZE, ACME),
    "tenant settings": ("PUT", "/v1/tenants/acme", {"max_active_jobs": 5}, ADMIN),
}


def read_path(item: dict[str, Any]) -> str:
    """Where the API shows a marked item."""
    pk, sk = item["pk"]["S"], item["sk"]["S"]
    if pk.startswith("JOB#"):
        kind = "workflows" if item["kind"]["S"] == "WORKFLOW" else "jobs"
        return f"/v1/{kind}/{pk.removeprefix('JOB#')}"
    if sk.startswith("CALENDAR#"):
        return f"/v1/calendars/{sk.removeprefix('CALENDAR#')}"
    if sk.startswith("FREEZE#"):
        return f"/v1/freezes/{sk.removeprefix('FREEZE#')}"
    return "/v1/tenants/acme"


@pytest.mark.parametrize("made", sorted(CREATES))
def test_an_item_still_marked_for_its_audit_record_reads_as_before_and_its_mark_is_never_shown(
    strong_api: ApiClient, strong_pipeline: Any, made: str
) -> None:
    method, path, body, identity = CREATES[made]
    with dying_before_update(strong_pipeline, "REMOVE audit_pending"):  # before the mark's clear
        strong_api.request(method, path, body=body, identity=identity)
    (marked,) = [i for i in table_items(strong_pipeline).values() if "audit_pending" in i]
    listing = path if method == "POST" else "/v1/tenants/me"
    for read in (read_path(marked), listing, "/v1/audit"):
        reply = strong_api.get(read, identity=identity)
        assert reply.status == 200, (read, reply.text)
        assert "audit_pending" not in reply.text
    assert [r["action"] for r in audit_items(strong_pipeline)][-1:] == [CREATES_ACTIONS[made]]  # confirmed already


CREATES_ACTIONS = {
    "job": "job.create",
    "workflow": "workflow.create",
    "calendar": "calendar.create",
    "freeze": "freeze.create",
    "tenant settings": "tenant.settings",
}


def test_no_write_replaces_an_item_an_audited_change_marks_without_its_mark(api: ApiClient, pipeline: Any) -> None:
    # A put that replaced a marked item would drop its mark, and the change would then be settled as not happened
    # (its record lost): over every API call, then the tick and the executors they set going, a PutItem on an item
    # that an audited change marks is an audited change itself, or a create (which cannot replace).
    if pipeline.services.settings.region_mode != "strong":
        pytest.skip("items are marked in strong only")
    for _, call_of in sorted(CALLS.items()):
        assert call_of(api, pipeline).send(api).status < 300
    pipeline.tick()
    pipeline.drain()
    marked: set[tuple[str, str]] = set()  # the items an audited change has marked so far
    for _, operation, params in pipeline.calls.calls:
        if operation == "UpdateItem" and f"{MARK} = :audit_marker" in params.get("UpdateExpression", ""):
            marked.add((params["Key"]["pk"]["S"], params["Key"]["sk"]["S"]))
        if operation != "PutItem":
            continue
        put = params["Item"]
        if MARK in put:
            marked.add((put["pk"]["S"], put["sk"]["S"]))
        elif (put["pk"]["S"], put["sk"]["S"]) in marked:
            assert params.get("ConditionExpression") == "attribute_not_exists(pk)", params
    assert len(marked) > len(CALLS) / 2
