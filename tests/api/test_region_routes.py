"""/v1/regions (docs/regions.md): an admin reads the regions' roles and fails over; RegionMode eventual only. The
failover is refused while replication cannot be told to have caught up unless forced; forced, it names the runs that
may run twice; each publishes `Region Failover`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from tickwork_local.aws.replication_latency import ReplicationLatencyPublisher

from tests.api.conftest import ACME, ApiClient, role_identity
from tests.api.test_audit_trail import audit_items
from tests.harness import START, Pipeline

ADMIN = role_identity("tickwork-admin", session="ops")
NO_ACTIVE_REGION = {"active_region": None, "epoch": None, "since": None}


@pytest.fixture
def eventual_api(mocked_aws: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApiClient]:
    from api import app as api_app

    monkeypatch.setenv("API_AUTH_MODE", "iam")
    monkeypatch.delenv("API_KEYS_FILE", raising=False)
    with Pipeline.create(REGION_MODE="eventual", GLOBAL_TABLE_REGIONS="us-east-1,us-east-2") as pipeline:
        api_app.use_services(pipeline.services)
        try:
            yield ApiClient(pipeline)
        finally:
            api_app.use_services(None)


def _published(pipeline: Pipeline) -> list[dict[str, Any]]:
    return [
        {"type": entry["DetailType"], **json.loads(entry["Detail"])}
        for call in pipeline.calls.params("PutEvents")
        for entry in call["Entries"]
        if entry["DetailType"] == "Region Failover"
    ]


def test_no_region_is_active_until_an_admin_fails_over_to_one(eventual_api):
    reply = eventual_api.get("/v1/regions", identity=ADMIN)
    assert reply.status == 200, reply.text
    assert reply.json == {"mode": "eventual", "region": "us-east-1", **NO_ACTIVE_REGION}
    reply = eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN)
    assert reply.status == 200, reply.text
    assert reply.json["active_region"] == "us-east-1"
    assert reply.json["epoch"] == 1
    assert (reply.json["previous_region"], reply.json["forced"], reply.json["possibly_twice"]) == (None, False, [])
    status = eventual_api.get("/v1/regions", identity=ADMIN).json
    assert (status["active_region"], status["epoch"]) == ("us-east-1", 1)
    # The health endpoint shows the same, and the replication lag (none published yet).
    health = eventual_api.get("/v1/health", identity=ACME).json["region"]
    assert health == {
        **status,
        "replication_lag_ms": None,
        "replication_lag_reason": "no ReplicationLatency data in the last 5 minutes",
    }
    (event,) = _published(eventual_api.pipeline)
    assert (event["active_region"], event["epoch"]) == ("us-east-1", 1)
    assert event["by"]["id"].endswith("assumed-role/tickwork-admin/ops")
    assert event["event_id"] == "regions#region-failover#1"
    # Attributed to the admin who made it, in the same write: one audit record.
    (record,) = [r for r in audit_items(eventual_api.pipeline) if r["action"] == "region.failover"]
    assert record["actor"]["id"].endswith("assumed-role/tickwork-admin/ops")
    assert record["resource"] == {"kind": "region", "id": "us-east-1"}
    assert record["outcome"] == "succeeded"


def test_the_health_endpoint_shows_the_replication_lag_of_this_regions_writes(eventual_api):
    """CloudWatch's ReplicationLatency of the global table to the other region, as AWS (and tickwork dev) publish it."""
    pipeline = eventual_api.pipeline
    ReplicationLatencyPublisher(
        lambda: {("us-east-1", "us-east-2"): 1.25},
        {"us-east-1": pipeline.services.clients.client("cloudwatch")},
        table=pipeline.services.settings.table_name,
        clock=pipeline.clock,
    ).publish()
    pipeline.clock.advance(1)
    health = eventual_api.get("/v1/health", identity=ACME)
    assert health.status == 200, health.text
    assert (health.json["region"]["replication_lag_ms"], health.json["region"]["replication_lag_reason"]) == (
        1250,
        None,
    )


def test_a_failover_from_an_active_region_waits_for_replication_unless_forced_and_names_the_runs_in_flight(
    eventual_api,
):
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN).status == 200
    # A run in flight: claimed when its job was created (due within the horizon), not ended.
    job = eventual_api.create(schedule={"at": (START + timedelta(seconds=30)).isoformat()})
    (run,) = eventual_api.pipeline.runs_of(job["id"])
    refused = eventual_api.post("/v1/regions/failover", {"to": "us-east-2"}, identity=ADMIN)
    assert refused.status == 409, refused.text
    assert "replication has not caught up" in refused.json["detail"]
    assert eventual_api.get("/v1/regions", identity=ADMIN).json["active_region"] == "us-east-1"
    forced = eventual_api.post("/v1/regions/failover", {"to": "us-east-2", "force": True}, identity=ADMIN)
    assert forced.status == 200, forced.text
    assert forced.json["active_region"] == "us-east-2"
    assert forced.json["epoch"] == 2
    assert forced.json["previous_region"] == "us-east-1"
    assert forced.json["forced"] is True
    assert forced.json["possibly_twice"] == [run.id]
    assert [e["epoch"] for e in _published(eventual_api.pipeline)] == [1, 2]
    assert _published(eventual_api.pipeline)[1]["possibly_twice"] == [run.id]
    # The refused failover changed nothing, so left no record; each made one did.
    failovers = [r for r in audit_items(eventual_api.pipeline) if r["action"] == "region.failover"]
    assert sorted(r["resource"]["id"] for r in failovers) == ["us-east-1", "us-east-2"]
    (forced_record,) = [r for r in failovers if r["resource"]["id"] == "us-east-2"]
    assert forced_record["changes"]["active_region"] == {"before": "us-east-1", "after": "us-east-2"}


@pytest.mark.parametrize(
    ("body", "status", "detail"),
    [
        ({"to": "eu-west-1"}, 409, "not one of the global table's regions"),
        ({"to": "us-east-1", "force": True}, 409, "already the active region"),
        ({"to": "Mars"}, 422, None),
    ],
)
def test_a_failover_is_refused(eventual_api, body, status, detail):
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN).status == 200
    reply = eventual_api.post("/v1/regions/failover", body, identity=ADMIN)
    assert reply.status == status, reply.text
    if detail:
        assert detail in reply.json["detail"]
    assert eventual_api.get("/v1/regions", identity=ADMIN).json["epoch"] == 1


def test_a_tenant_may_not_read_or_fail_over(eventual_api):
    assert eventual_api.get("/v1/regions", identity=ACME).status == 403
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ACME).status == 403
    assert eventual_api.get("/v1/regions", identity=ADMIN).json["active_region"] is None


def test_outside_eventual_there_is_nothing_to_fail_over(api):
    assert api.get("/v1/regions", identity=ADMIN).json == {"mode": "single", "region": "us-east-1", **NO_ACTIVE_REGION}
    reply = api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN)
    assert reply.status == 409, reply.text
    assert "for RegionMode eventual" in reply.json["detail"]
