"""POST /v1/runs/{id}/cancel: a RUNNING run is asked to stop (its executor's heartbeat sees it and records it
SKIPPED cancelled); any other run is a 409 and nothing is written; another tenant's run is a 404."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.api.conftest import GLOBEX

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def queued_run(api) -> dict:
    job = api.create(name="cancel-me", schedule={"rate": "1 day"})
    reply = api.post(f"/v1/jobs/{job['id']}/trigger")
    assert reply.status == 202, reply.text
    return reply.json


def test_a_running_run_is_asked_to_stop(api, pipeline):
    run = queued_run(api)
    leases = pipeline.services.store.leases
    leases.lease_run(run["id"], owner="busy", now=pipeline.clock.now(), lease_for=timedelta(seconds=60))
    reply = api.post(f"/v1/runs/{run['id']}/cancel")
    assert reply.status == 202, reply.text
    assert (reply.json["id"], reply.json["status"]) == (run["id"], "RUNNING")
    assert leases.cancel_requested(run["id"])


def test_a_run_that_is_not_running_cannot_be_cancelled_and_nothing_is_written(api, pipeline):
    run = queued_run(api)
    reply = api.post(f"/v1/runs/{run['id']}/cancel")
    assert reply.status == 409
    assert "RUNNING" in reply.json["detail"]
    assert not pipeline.services.store.leases.cancel_requested(run["id"])


def test_another_tenants_run_and_an_unknown_run_are_404(api, pipeline):
    run = queued_run(api)
    leases = pipeline.services.store.leases
    leases.lease_run(run["id"], owner="busy", now=pipeline.clock.now(), lease_for=timedelta(seconds=60))
    assert api.post(f"/v1/runs/{run['id']}/cancel", identity=GLOBEX).status == 404
    assert not leases.cancel_requested(run["id"])
    assert api.post("/v1/runs/r" + "0" * 40 + "/cancel").status in (404, 422)
