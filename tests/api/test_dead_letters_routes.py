"""/v1/dead-letters: an admin reads the band queues' SQS dead-letter queues and redrives them (SQS's message move
task, played by moto through tickwork_local.aws.moto_message_moves); a tenant is refused before anything is read."""

from __future__ import annotations

import pytest

from tests.api.conftest import ACME, role_identity

ADMIN = role_identity("tickwork-admin", session="ops")
ALL = {"bands": ["high", "normal", "low"]}


def _poison(pipeline, band: str, count: int = 1) -> None:
    """Messages the executor could not process, on the band's SQS dead-letter queue."""
    for i in range(count):
        pipeline.sqs.send_message(QueueUrl=pipeline.resources.dlq_urls[band], MessageBody=f"poison {i}")


def _queue_bodies(pipeline, url: str) -> list[str]:
    messages = pipeline.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
    return sorted(m["Body"] for m in messages.get("Messages", []))


def test_an_admin_reads_what_each_dead_letter_queue_holds(api, pipeline):
    _poison(pipeline, "normal", 2)
    reply = api.get("/v1/dead-letters", identity=ADMIN)
    assert reply.status == 200, reply.text
    items = {item["band"]: item for item in reply.json["items"]}
    assert list(items) == ["high", "normal", "low"]
    assert (items["normal"]["messages"], items["normal"]["in_flight"]) == (2, 0)
    assert items["high"]["messages"] == items["low"]["messages"] == 0
    assert all(item["last_redrive"] is None for item in items.values())


def test_a_redrive_moves_the_messages_back_to_the_bands_queue(api, pipeline):
    _poison(pipeline, "high", 3)
    reply = api.post("/v1/dead-letters/redrive", ALL, identity=ADMIN)
    assert reply.status == 202, reply.text
    assert reply.json == {"started": ["high"], "empty": ["normal", "low"], "running": []}
    assert _queue_bodies(pipeline, pipeline.resources.dlq_urls["high"]) == []
    assert _queue_bodies(pipeline, pipeline.resources.queue_urls["high"]) == ["poison 0", "poison 1", "poison 2"]
    (high, *_) = api.get("/v1/dead-letters", identity=ADMIN).json["items"]
    assert high["messages"] == 0
    assert {k: high["last_redrive"][k] for k in ("status", "moved", "to_move")} == {
        "status": "COMPLETED",
        "moved": 3,
        "to_move": 3,
    }


def test_nothing_to_redrive_is_a_409_and_starts_no_move(api, pipeline):
    pipeline.calls.clear()
    reply = api.post("/v1/dead-letters/redrive", ALL, identity=ADMIN)
    assert reply.status == 409, reply.text
    assert "nothing to redrive" in reply.json["detail"]
    assert pipeline.calls.count("StartMessageMoveTask") == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "bands"), ({"bands": []}, "bands"), ({"bands": ["urgent"]}, "bands[0]"), ({"bands": ["low"], "x": 1}, "x")],
)
def test_a_bad_body_is_a_422_naming_the_field(api, pipeline, body, field):
    _poison(pipeline, "low")
    reply = api.post("/v1/dead-letters/redrive", body, identity=ADMIN)
    assert reply.status == 422, reply.text
    assert field in {error["field"] for error in reply.json["errors"]}
    assert _queue_bodies(pipeline, pipeline.resources.dlq_urls["low"]) == ["poison 0"]


def test_a_tenant_that_is_not_an_admin_gets_403_before_anything_is_read_or_moved(api, pipeline):
    _poison(pipeline, "low")
    pipeline.calls.clear()
    for reply in (
        api.get("/v1/dead-letters", identity=ACME),
        api.post("/v1/dead-letters/redrive", ALL, identity=ACME),
        api.post("/v1/dead-letters/redrive", {"bands": "bad"}, identity=ACME),  # a 403, not a 422
    ):
        assert reply.status == 403, reply.text
        assert "an admin is needed" in reply.json["detail"]
    assert set(pipeline.calls.by_operation()) <= {"ListRoleTags"}  # the caller's role's tags, nothing else
    assert _queue_bodies(pipeline, pipeline.resources.dlq_urls["low"]) == ["poison 0"]
