"""A job's variants through the API (docs/versions.md): declared at create and PATCH (and on a workflow's steps),
refused at their field; their stats over a window (`GET /v1/jobs/{id}/variants`); a variant promoted (its overrides
folded into the job, a new version, audited) and rolled back (removed, why recorded, audited)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, StrictBool
from tickwork.jobtypes import RunContext, job_type, registry
from tickwork.model.policies import NotCoerced
from tickwork.model.variants import BASELINE

from tests.api.conftest import GLOBEX

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

V2 = {"name": "v2", "weight": 20, "payload": {"greeting": "hej"}}


def _job(api, **spec: Any) -> dict[str, Any]:
    return api.create(payload={"greeting": "hi", "keep": 1}, variants=[V2], **spec)


def test_a_job_keeps_its_variants(api):
    job = _job(api)
    assert job["variants"] == [{**V2, "type": None, "target": None}]
    assert api.get(f"/v1/jobs/{job['id']}").json["variants"] == job["variants"]


@pytest.mark.parametrize(
    ("variants", "field"),
    [
        ([V2, V2], "variants"),
        ([{"name": "baseline", "weight": 5}], "variants[0].name"),
        ([{"name": "a", "weight": 70}, {"name": "b", "weight": 31}], "variants"),
        ([{"name": "a", "weight": 5, "type": "http"}], "variants[0].type"),
        ([{"name": "a", "weight": 5, "target": "live"}], "variants[0].target"),
        ([{"name": "a", "weight": 5, "type": "lambda"}], "variants[0].type"),
    ],
)
def test_bad_variants_are_refused_at_their_field_and_nothing_is_written(api, pipeline, variants, field):
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "variants": variants})
    assert reply.status == 422, reply.text
    assert field in reply.fields
    assert api.get("/v1/jobs").json["items"] == []


def test_a_lambda_variant_is_checked_as_its_type_checks_its_payload(api):
    spec = {
        "name": "n",
        "type": "lambda",
        "schedule": {"rate": "1 hour"},
        "payload": {"function_arn": "tickwork-job-report"},
    }
    bad = api.post("/v1/jobs", {**spec, "variants": [{"name": "v", "weight": 5, "payload": {"function_arn": None}}]})
    assert bad.status == 422, bad.text
    assert bad.fields == ["variants[0].payload.function_arn"]
    good = api.post("/v1/jobs", {**spec, "variants": [{"name": "v", "weight": 5, "target": "live"}]})
    assert good.status == 201, good.text


def test_a_patch_checks_the_variants_against_the_job(api):
    job = api.create(type="lambda", payload={"function_arn": "tickwork-job-report"})
    bad = api.patch(f"/v1/jobs/{job['id']}", {"variants": [{"name": "v", "weight": 5, "type": "echo"}]})
    assert bad.status == 422, bad.text
    assert bad.fields == ["variants[0].type"]
    good = api.patch(f"/v1/jobs/{job['id']}", {"variants": [{"name": "v", "weight": 5, "target": "7"}]})
    assert good.status == 200, good.text
    assert good.json["variants"][0]["target"] == "7"


def test_a_workflow_step_s_variants_are_checked_at_the_step(api):
    step = {"id": "a", "type": "echo", "variants": [{"name": "v", "weight": 5, "target": "live"}]}
    reply = api.post("/v1/workflows", {"name": "w", "schedule": {"rate": "1 hour"}, "steps": [step]})
    assert reply.status == 422, reply.text
    assert reply.fields == ["steps[0].variants[0].target"]


def test_promote_folds_the_variant_into_the_job_as_a_new_version_audited(api):
    job = _job(api)
    reply = api.post(f"/v1/jobs/{job['id']}/variants/v2/promote")
    assert reply.status == 200, reply.text
    promoted = reply.json
    assert (promoted["payload"], promoted["variants"], promoted["version"]) == (
        {"greeting": "hej", "keep": 1},
        [],
        job["version"] + 1,
    )
    (record,) = [r for r in api.get("/v1/audit").json["items"] if r["action"] == "job.variant_promote"]
    assert record["changes"]["payload"]["after"] == {"greeting": "hej", "keep": 1}


def test_rollback_removes_the_variant_and_says_who(api):
    job = _job(api)
    reply = api.post(f"/v1/jobs/{job['id']}/variants/v2/rollback")
    assert reply.status == 200, reply.text
    rolled = reply.json
    assert (rolled["payload"], rolled["variants"], rolled["version"]) == (job["payload"], [], job["version"] + 1)
    assert rolled["variant_rollback"]["variant"] == "v2"
    assert rolled["variant_rollback"]["reason"].startswith("rolled back by hand")
    actions = [r["action"] for r in api.get("/v1/audit").json["items"]]
    assert actions.count("job.variant_rollback") == 1


@pytest.mark.parametrize("action", ["promote", "rollback"])
def test_an_unknown_variant_or_job_is_404_and_changes_nothing(api, action):
    job = _job(api)
    assert api.post(f"/v1/jobs/{job['id']}/variants/v9/{action}").status == 404
    assert api.post(f"/v1/jobs/j{'0' * 25}/variants/v2/{action}").status == 404
    assert api.get(f"/v1/jobs/{job['id']}").json["version"] == job["version"]


def test_the_stats_of_each_variant_over_a_window(api, pipeline):
    job = _job(api, schedule={"rate": "1 hour"})
    for _ in range(12):
        assert api.post(f"/v1/jobs/{job['id']}/trigger").status in (200, 201, 202)
        pipeline.clock.advance(1)
    pipeline.drain()
    reply = api.get(f"/v1/jobs/{job['id']}/variants", query={"window": "1h"})
    assert reply.status == 200, reply.text
    view = reply.json
    assert (view["runs_read"], view["truncated"], view["guard"]["min_runs"]) == (12, False, 30)
    by_name = {v["name"]: v for v in view["variants"]}
    assert set(by_name) == {BASELINE, "v2"}
    assert (by_name[BASELINE]["weight"], by_name["v2"]["weight"]) == (80, 20)
    assert by_name[BASELINE]["runs"] + by_name["v2"]["runs"] == 12
    ran = [v for v in view["variants"] if v["runs"]]
    assert all(v["success_rate"] == 1.0 and v["attempts_per_run"] == 1.0 for v in ran)
    assert all(v["duration_p50_ms"] is not None and v["cost_per_run_usd"] is not None for v in ran)
    runs = api.get(f"/v1/jobs/{job['id']}/runs", query={"limit": 50}).json["items"]
    recorded = sorted(r["variant"] for r in runs)
    assert recorded.count("v2") == by_name["v2"]["runs"]


def test_a_window_outside_its_bounds_is_refused(api):
    job = _job(api)
    for window in ("31d", "0h", "1w", "h"):
        reply = api.get(f"/v1/jobs/{job['id']}/variants", query={"window": window})
        assert reply.status in (400, 422), reply.text
        assert reply.fields == ["window"]


class _PromoV1(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows: Annotated[int, NotCoerced] = 1
    legacy: StrictBool = False  # version 2 has no such field


class _PromoV2(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows: Annotated[int, NotCoerced] = 1


if "promo_probe" not in registry:

    @job_type("promo_probe", _PromoV1)
    def _promo_v1(payload: _PromoV1, ctx: RunContext) -> dict[str, Any]:
        return {}

    @job_type("promo_probe@2", _PromoV2)
    def _promo_v2(payload: _PromoV2, ctx: RunContext) -> dict[str, Any]:
        if not payload.rows:
            raise RuntimeError("no rows")
        return {}


def test_a_promotion_that_leaves_another_variant_invalid_over_the_new_baseline_is_refused(api):
    legacy = {"name": "legacy", "weight": 10, "payload": {"legacy": True}}
    job = api.create(type="promo_probe", variants=[{"name": "v2", "weight": 10, "type": "promo_probe@2"}, legacy])
    reply = api.post(f"/v1/jobs/{job['id']}/variants/v2/promote")
    assert reply.status == 422, reply.text  # `legacy` would run promo_probe@2 with a field it does not have
    assert reply.fields == ["variants[0].payload.legacy"]
    assert api.get(f"/v1/jobs/{job['id']}").json["version"] == job["version"]


@pytest.mark.parametrize("action", ["promote", "rollback"])
def test_another_tenant_s_variant_is_404_and_changes_nothing(api, action):
    job = _job(api)
    assert api.post(f"/v1/jobs/{job['id']}/variants/v2/{action}", identity=GLOBEX).status == 404
    assert api.get(f"/v1/jobs/{job['id']}/variants", identity=GLOBEX).status == 404
    assert api.get(f"/v1/jobs/{job['id']}").json["version"] == job["version"]


def test_a_trigger_s_payload_is_checked_under_the_variants_as_the_job_s_is(api):
    job = api.create(type="promo_probe", variants=[{"name": "v2", "weight": 100, "type": "promo_probe@2"}])
    reply = api.post(f"/v1/jobs/{job['id']}/trigger", {"payload": {"legacy": True}})
    assert reply.status == 422, reply.text  # every run is v2's, whose type has no `legacy`
    assert reply.fields == ["variants[0].payload.legacy"]
    assert api.get(f"/v1/jobs/{job['id']}/runs").json["items"] == []


def test_a_retry_s_payload_is_checked_as_its_run_s_variant_runs_it(api, pipeline):
    v2 = {"name": "v2", "weight": 100, "type": "promo_probe@2"}
    job = api.create(type="promo_probe", payload={"rows": 0}, retry={"max_attempts": 1}, variants=[v2])
    assert api.post(f"/v1/jobs/{job['id']}/trigger").status == 202
    pipeline.drain()
    (run,) = api.get(f"/v1/jobs/{job['id']}/runs").json["items"]
    assert (run["status"], run["variant"]) == ("FAILED", "v2")
    reply = api.post(f"/v1/runs/{run['id']}/retry", {"payload": {"rows": 2, "legacy": True}})
    assert reply.status == 422, reply.text  # v2's type has no `legacy`, though the job's type has
    assert reply.fields == ["payload.legacy"]
    assert api.get(f"/v1/runs/{run['id']}").json["status"] == "FAILED"


def test_variants_too_large_for_the_job_item_are_refused_at_variants(api):
    big = [{"name": f"v{i}", "weight": 10, "payload": {"pad": "x" * 80_000}} for i in range(5)]
    reply = api.post("/v1/jobs", {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "variants": big})
    assert reply.status in (413, 422), reply.text
    assert reply.fields == ["variants"]
    assert api.get("/v1/jobs").json["items"] == []


def test_a_promotion_keeps_another_variant_of_the_promoted_type(api):
    v2 = {"name": "v2", "weight": 10, "type": "promo_probe@2"}
    v3 = {"name": "v3", "weight": 10, "type": "promo_probe@2", "payload": {"rows": 3}}
    job = api.create(type="promo_probe", variants=[v2, v3])
    reply = api.post(f"/v1/jobs/{job['id']}/variants/v2/promote")
    assert reply.status == 200, reply.text
    assert reply.json["type"] == "promo_probe@2"
    (kept,) = reply.json["variants"]
    assert (kept["name"], kept["type"], kept["payload"]) == ("v3", None, {"rows": 3})  # the job's type now
