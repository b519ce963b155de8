"""The audit trail in RegionMode strong (docs/regions.md section 2; an MRSC table has no transactions): every change
through the API writes the one record it writes in single mode, through an intent and its confirm
(tickwork.store.pending_audits), and no request is a TransactWriteItems. Walked over the same calls as
tests/api/test_audit_trail.py, in both modes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.conftest import ApiClient
from tests.api.test_audit_trail import ADMIN, CALLS, audit_items, table_items
from tests.harness import Pipeline

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


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
    items = table_items(pipeline).values()
    assert not [i for i in items if i.get("kind", {}).get("S") == "AUDIT_PENDING"]  # every intent confirmed
    assert not [i for i in items if "audit_pending" in i]  # and every mark cleared
    assert not [text for text in answers if "audit_pending" in text]
    listed = api.get("/v1/audit", query={"tenant": "*", "limit": 100}, identity=ADMIN).json["items"]
    assert len(listed) == len(audit_items(pipeline)) > len(CALLS)
