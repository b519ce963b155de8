"""/v1/freezes through the real API handler (moto, fake clock): a tenant freezes its own jobs, an admin every
tenant's (refused to a non-admin), a freeze is lifted early, and bad input is refused by name with nothing
written."""

from __future__ import annotations

from typing import Any

import pytest
from tickwork.model.states import RunStatus

from tests.api.conftest import GLOBEX
from tests.api.test_calendar_routes import _nothing_written
from tests.api.test_tenant_admin_routes import ADMIN

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

DEPLOY = {"selector": {"tags": {"team": "payments"}}, "for_seconds": 1800, "reason": "deploy 1.42"}


def _freeze(api: Any, body: dict[str, Any] = DEPLOY, **kwargs: Any) -> dict[str, Any]:
    reply = api.post("/v1/freezes", body, **kwargs)
    assert reply.status == 201, reply.text
    return reply.json


def test_a_tenant_freezes_reads_lists_and_lifts_its_own(api, pipeline):
    created = _freeze(api)
    assert created["id"].startswith("f")
    assert created["tenant"] == "acme"
    assert created["lifted_at"] is None
    path = f"/v1/freezes/{created['id']}"
    assert api.get(path).json == created
    assert api.get("/v1/freezes").json == {"items": [created]}
    assert api.get(path, identity=GLOBEX).status == 404  # another tenant's does not exist for it
    assert api.get("/v1/freezes", identity=GLOBEX).json == {"items": []}
    pipeline.clock.advance(60)
    lifted = api.delete(path)
    assert lifted.status == 200, lifted.text
    assert lifted.json["lifted_at"] is not None
    assert api.delete(path).status == 409  # lifted already


def test_an_admin_freezes_every_tenant_and_a_tenant_may_not(api, pipeline):
    pipeline.calls.clear()
    refused = api.post("/v1/freezes", {**DEPLOY, "every_tenant": True})
    assert refused.status == 403, refused.text
    assert _nothing_written(pipeline)
    everyone = _freeze(api, {**DEPLOY, "every_tenant": True}, identity=ADMIN)
    assert everyone["tenant"] == "*"
    assert [f["id"] for f in api.get("/v1/freezes", identity=GLOBEX).json["items"]] == [everyone["id"]]
    assert api.delete(f"/v1/freezes/{everyone['id']}").status == 403
    assert api.delete(f"/v1/freezes/{everyone['id']}", identity=ADMIN).status == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (
            {**DEPLOY, "for_seconds": None, "from": "2026-11-21T13:00:00Z", "until": "2026-11-21T12:30:00Z"},
            "until",
        ),
        ({**DEPLOY, "for_seconds": None}, "until"),
        ({**DEPLOY, "until": "2026-11-21T13:00:00Z"}, "until"),
        ({**DEPLOY, "selector": {"all": True, "job_ids": ["j1"]}}, "selector"),
        ({**DEPLOY, "on_blocked": "LATER"}, "on_blocked"),
    ],
)
def test_a_bad_freeze_is_refused_naming_the_field_and_nothing_is_written(api, pipeline, body, field):
    pipeline.calls.clear()
    reply = api.post("/v1/freezes", {k: v for k, v in body.items() if v is not None})
    assert reply.status == 422, reply.text
    assert reply.fields == [field]
    assert _nothing_written(pipeline)


def test_a_run_claimed_before_the_freeze_is_marked_for_its_executor(api, pipeline):
    # tests/integration/test_freeze_pipeline.py runs it: SKIPPED `freeze` while the freeze holds.
    job = api.create(schedule={"rate": "1 minute"}, tags={"team": "payments"})  # its first run claimed now
    other = api.create(schedule={"rate": "1 minute"}, tags={"team": "search"})
    freeze = _freeze(api)
    runs = {r.job_id: r for r in (pipeline.runs_of(job["id"]) + pipeline.runs_of(other["id"]))}
    assert (runs[job["id"]].status, runs[job["id"]].blocked_by) == (RunStatus.QUEUED, freeze["id"])
    assert runs[other["id"]].blocked_by is None


def test_a_job_s_preview_marks_the_occurrences_a_freeze_over_it_blocks_with_the_freeze_s_own_policy(api, pipeline):
    """The defect: the preview read the job's calendars only, so the job's page showed an occurrence a freeze
    holds (or skips) unmarked."""
    job = api.create(schedule={"rate": "10 minutes"}, tags={"team": "payments"})
    other = api.create(schedule={"rate": "10 minutes"}, tags={"team": "data"})
    held = _freeze(api, {**DEPLOY, "on_blocked": "DEFER"})  # the freeze's own, whatever the job's (SKIP)
    items = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 6}).json["items"]
    blocked = [item for item in items if item.get("blocked")]
    assert blocked, items
    assert {item["blocked"]["reason"] for item in blocked} == {"freeze"}
    assert {item["blocked"]["by"] for item in blocked} == {held["id"]}
    assert all(item["at"] < held["until"] for item in blocked)
    assert blocked[-1]["blocked"]["then"] == "defer"  # the latest kept (catch-up LATEST), run at the freeze's end
    assert blocked[-1]["blocked"]["runs_at"] == held["until"]
    assert not any(item.get("blocked") for item in items if item["at"] >= held["until"])
    unfrozen = api.get(f"/v1/jobs/{other['id']}/preview", query={"count": 6}).json["items"]
    assert not any(item.get("blocked") for item in unfrozen)

    api.delete(f"/v1/freezes/{held['id']}")
    lifted = api.get(f"/v1/jobs/{job['id']}/preview", query={"count": 6}).json["items"]
    assert not any(item.get("blocked") for item in lifted)
