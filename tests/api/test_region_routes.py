"""/v1/regions (docs/regions.md): an admin reads the regions' roles and fails over; RegionMode eventual only. The
failover hands over first (no region active), and completes once replication has caught up, or forced; forced, it
names the runs that may run twice; each publishes `Region Failover`."""

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
NO_ACTIVE_REGION = {
    "active_region": None,
    "epoch": None,
    "since": None,
    "handing_over_to": None,
    "handing_over_from": None,
}


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
    _publish_latency(pipeline, 1.25)
    pipeline.clock.advance(1)
    health = eventual_api.get("/v1/health", identity=ACME)
    assert health.status == 200, health.text
    assert (health.json["region"]["replication_lag_ms"], health.json["region"]["replication_lag_reason"]) == (
        1250,
        None,
    )


def _publish_latency(pipeline: Pipeline, seconds: float) -> None:
    """us-east-1's writes reach us-east-2 in `seconds`, as CloudWatch (and tickwork dev) publish it there."""
    ReplicationLatencyPublisher(
        lambda: {("us-east-1", "us-east-2"): seconds},
        {"us-east-1": pipeline.services.clients.client("cloudwatch")},
        table=pipeline.services.settings.table_name,
        clock=pipeline.clock,
    ).publish()


def test_a_failover_hands_over_first_and_completes_once_replication_has_caught_up(eventual_api):
    """One table stands for both replicas (replication caught up at once): the old region's replica shows the
    handover as soon as it is written; what is waited for is its last writes' replication."""
    pipeline = eventual_api.pipeline
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN).status == 200
    job = eventual_api.create(schedule={"at": (START + timedelta(minutes=4)).isoformat()})  # past the horizon
    handover = eventual_api.post("/v1/regions/failover", {"to": "us-east-2"}, identity=ADMIN)
    assert handover.status == 409, handover.text
    assert handover.json["detail"] == (
        "handing over from us-east-1 to us-east-2 (epoch 2, no region active): replication has not caught up with "
        "the old active region; wait, or force; asking again completes it"
    )
    status = eventual_api.get("/v1/regions", identity=ADMIN).json
    assert {k: status[k] for k in ("active_region", "epoch", "handing_over_to", "handing_over_from")} == {
        "active_region": None,
        "epoch": 2,
        "handing_over_to": "us-east-2",
        "handing_over_from": "us-east-1",
    }
    # The old active region's tick claims nothing from its next fence read on.
    pipeline.clock.advance(3 * 60)
    pipeline.tick()
    assert pipeline.runs_of(job["id"]) == []
    # No ReplicationLatency from the old region: it cannot be told (the CLI stops and prints why).
    unknown = eventual_api.post("/v1/regions/failover", {"to": "us-east-2"}, identity=ADMIN)
    assert unknown.status == 409, unknown.text
    assert "cannot be told" in unknown.json["detail"]
    assert unknown.json["detail"].endswith("no ReplicationLatency data from the old active region to the target")
    _publish_latency(pipeline, 1.5)
    pipeline.clock.advance(1)
    waiting = eventual_api.post("/v1/regions/failover", {"to": "us-east-2"}, identity=ADMIN)
    assert waiting.status == 409, waiting.text
    assert "replication has not caught up" in waiting.json["detail"]
    assert "waiting 71 s more" in waiting.json["detail"]  # 60 s for a fenced write, 1.5 s latency, 10 s margin
    assert eventual_api.get("/v1/regions", identity=ADMIN).json["epoch"] == 2  # a refusal writes nothing
    pipeline.clock.advance(71)
    done = eventual_api.post("/v1/regions/failover", {"to": "us-east-2"}, identity=ADMIN)
    assert done.status == 200, done.text
    assert {k: done.json[k] for k in ("active_region", "epoch", "previous_region", "forced", "possibly_twice")} == {
        "active_region": "us-east-2",
        "epoch": 3,
        "previous_region": "us-east-1",
        "forced": False,
        "possibly_twice": [],
    }
    assert [e["epoch"] for e in _published(pipeline)] == [1, 3]  # the handover is no failover yet
    failovers = [r for r in audit_items(pipeline) if r["action"] == "region.failover"]
    # The activation, the handover and its completion (the first two at one instant of the test's clock).
    assert sorted(r["resource"]["id"] for r in failovers) == ["us-east-1", "us-east-2", "us-east-2"]
    # The new active region claims (here: the same table, its fence naming it).
    pipeline.services.region_fence.region = "us-east-2"
    pipeline.tick()
    assert len(pipeline.runs_of(job["id"])) == 1


def test_a_forced_failover_is_one_step_and_names_the_runs_in_flight(eventual_api):
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN).status == 200
    # A run in flight: claimed when its job was created (due within the horizon), not ended.
    job = eventual_api.create(schedule={"at": (START + timedelta(seconds=30)).isoformat()})
    (run,) = eventual_api.pipeline.runs_of(job["id"])
    forced = eventual_api.post("/v1/regions/failover", {"to": "us-east-2", "force": True}, identity=ADMIN)
    assert forced.status == 200, forced.text
    assert forced.json["active_region"] == "us-east-2"
    assert forced.json["epoch"] == 2
    assert forced.json["previous_region"] == "us-east-1"
    assert forced.json["forced"] is True
    assert forced.json["possibly_twice"] == [run.id]
    assert [e["epoch"] for e in _published(eventual_api.pipeline)] == [1, 2]
    assert _published(eventual_api.pipeline)[1]["possibly_twice"] == [run.id]
    failovers = [r for r in audit_items(eventual_api.pipeline) if r["action"] == "region.failover"]
    assert sorted(r["resource"]["id"] for r in failovers) == ["us-east-1", "us-east-2"]
    (forced_record,) = [r for r in failovers if r["resource"]["id"] == "us-east-2"]
    assert forced_record["changes"]["active_region"] == {"before": "us-east-1", "after": "us-east-2"}


def test_a_forced_failover_completes_a_handover_and_reports_the_runs_in_flight(eventual_api):
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-1"}, identity=ADMIN).status == 200
    job = eventual_api.create(schedule={"at": (START + timedelta(seconds=30)).isoformat()})
    (run,) = eventual_api.pipeline.runs_of(job["id"])
    assert eventual_api.post("/v1/regions/failover", {"to": "us-east-2"}, identity=ADMIN).status == 409
    forced = eventual_api.post("/v1/regions/failover", {"to": "us-east-2", "force": True}, identity=ADMIN)
    assert forced.status == 200, forced.text
    assert (forced.json["epoch"], forced.json["previous_region"], forced.json["forced"]) == (3, "us-east-1", True)
    assert forced.json["possibly_twice"] == [run.id]


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
