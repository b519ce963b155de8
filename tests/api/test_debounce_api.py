"""Debounced triggers through the API: a trigger with a debounce starts a window or joins it, and says which, with
the window's run; its own payload is checked; a debounce under 1 s or over 24 h is a 422 naming the field, nothing
written; a trigger with no body is as before."""

from __future__ import annotations

from typing import Any

import pytest

WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem", "SendMessage", "PutObject")

JOB: dict[str, Any] = {"name": "sync", "type": "echo", "schedule": {"cron": "0 2 * * *"}}

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def test_a_trigger_without_a_body_runs_now_as_before(api):
    job = api.post("/v1/jobs", JOB).json
    reply = api.post(f"/v1/jobs/{job['id']}/trigger")
    assert reply.status == 202, reply.text
    assert reply.json["status"] == "QUEUED"
    assert "debounce_window" not in reply.json


def test_triggers_of_one_key_in_a_window_start_it_then_join_its_run(api, pipeline):
    job = api.post("/v1/jobs", JOB).json
    debounce = {"key": "customer-7", "seconds": 30}
    first = api.post(f"/v1/jobs/{job['id']}/trigger", {"debounce": debounce, "payload": {"n": 1}})
    assert first.status == 202, first.text
    assert first.json["debounce_window"] == "started"
    pipeline.clock.advance(10)
    second = api.post(f"/v1/jobs/{job['id']}/trigger", {"debounce": debounce, "payload": {"n": 2}})
    assert second.json["debounce_window"] == "joined"
    assert second.json["id"] == first.json["id"]
    run = api.get(f"/v1/runs/{first.json['id']}").json
    assert run["payload"] == {"n": 2}  # the last trigger's
    assert run["debounce"] == {"key": "customer-7", "collect": False, "triggers": 2}
    # Another key has a window of its own.
    other = api.post(f"/v1/jobs/{job['id']}/trigger", {"debounce": {**debounce, "key": "customer-8"}})
    assert other.json["debounce_window"] == "started"
    assert other.json["id"] != first.json["id"]


def test_the_jobs_own_debounce_applies_to_a_trigger_without_one(api):
    job = api.post("/v1/jobs", {**JOB, "debounce": {"key": "all", "seconds": 60, "collect": True}}).json
    first = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": {"n": 1}}).json
    second = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": {"n": 2}}).json
    assert (first["debounce_window"], second["debounce_window"]) == ("started", "joined")
    assert second["payload"] == {"payloads": [{"n": 1}, {"n": 2}]}


@pytest.mark.parametrize("seconds", [0, 86401, 0.5, "30"])
def test_a_debounce_under_1_s_or_over_24_h_is_422_and_writes_nothing(api, pipeline, seconds):
    job = api.post("/v1/jobs", JOB).json
    pipeline.calls.clear()
    reply = api.post(f"/v1/jobs/{job['id']}/trigger", {"debounce": {"key": "k", "seconds": seconds}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["debounce.seconds"]
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)


def test_a_jobs_debounce_over_24_h_is_422(api):
    reply = api.post("/v1/jobs", {**JOB, "debounce": {"key": "k", "seconds": 86401}})
    assert reply.status == 422, reply.text
    assert reply.fields == ["debounce.seconds"]


def test_a_trigger_payload_the_jobs_type_refuses_is_422_and_writes_nothing(api, pipeline):
    job = api.post("/v1/jobs", {**JOB, "type": "http", "payload": {"url": "https://example.com/hook"}}).json
    pipeline.calls.clear()
    reply = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": {"method": "GET"}})
    assert reply.status == 422, reply.text
    assert reply.fields[0].startswith("payload")
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
