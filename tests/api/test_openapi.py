"""The OpenAPI document: valid OpenAPI 3, every route of the contract, problem+json errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openapi_spec_validator import validate

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")

ROUTES = {
    ("get", "/v1/audit"),
    ("post", "/v1/jobs"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{job_id}"),
    ("patch", "/v1/jobs/{job_id}"),
    ("delete", "/v1/jobs/{job_id}"),
    ("post", "/v1/jobs/{job_id}/pause"),
    ("post", "/v1/jobs/{job_id}/resume"),
    ("post", "/v1/jobs/{job_id}/trigger"),
    ("get", "/v1/jobs/{job_id}/runs"),
    ("get", "/v1/jobs/{job_id}/preview"),
    ("post", "/v1/jobs/{job_id}/backfill"),
    ("get", "/v1/jobs/{job_id}/variants"),
    ("post", "/v1/jobs/{job_id}/variants/{name}/promote"),
    ("post", "/v1/jobs/{job_id}/variants/{name}/rollback"),
    ("post", "/v1/schedules/preview"),
    ("get", "/v1/runs"),
    ("get", "/v1/runs/stuck"),
    ("get", "/v1/runs/{run_id}"),
    ("get", "/v1/runs/{run_id}/result"),
    ("get", "/v1/runs/{run_id}/logs"),
    ("post", "/v1/runs/{run_id}/retry"),
    ("post", "/v1/runs/{run_id}/cancel"),
    ("post", "/v1/runs/{run_id}/skip"),
    ("get", "/v1/dlq"),
    ("post", "/v1/dlq/redrive"),
    ("post", "/v1/dlq/{run_id}/dismiss"),
    ("post", "/v1/bulk/jobs"),
    ("post", "/v1/bulk/jobs/create"),
    ("post", "/v1/bulk/runs"),
    ("get", "/v1/dead-letters"),
    ("post", "/v1/dead-letters/redrive"),
    ("get", "/v1/regions"),
    ("post", "/v1/regions/failover"),
    ("post", "/v1/workflows"),
    ("get", "/v1/workflows"),
    ("get", "/v1/workflows/{workflow_id}"),
    ("patch", "/v1/workflows/{workflow_id}"),
    ("delete", "/v1/workflows/{workflow_id}"),
    ("post", "/v1/workflows/{workflow_id}/pause"),
    ("post", "/v1/workflows/{workflow_id}/resume"),
    ("post", "/v1/workflows/{workflow_id}/trigger"),
    ("get", "/v1/workflows/{workflow_id}/runs"),
    ("get", "/v1/workflow-runs/{workflow_run_id}"),
    ("post", "/v1/workflow-runs/{workflow_run_id}/cancel"),
    ("post", "/v1/workflow-runs/{workflow_run_id}/retry"),
    ("get", "/v1/tenants/me"),
    ("get", "/v1/me"),
    ("get", "/v1/tenants/{tenant}"),
    ("put", "/v1/tenants/{tenant}"),
    ("get", "/v1/metrics"),
    ("get", "/v1/metrics/catalogue"),
    ("get", "/v1/health"),
    ("get", "/v1/openapi.json"),
    ("post", "/v1/calendars"),
    ("get", "/v1/calendars"),
    ("get", "/v1/calendars/{calendar_id}"),
    ("get", "/v1/calendars/{calendar_id}/blocked"),
    ("put", "/v1/calendars/{calendar_id}"),
    ("delete", "/v1/calendars/{calendar_id}"),
    ("post", "/v1/freezes"),
    ("get", "/v1/freezes"),
    ("get", "/v1/freezes/{freeze_id}"),
    ("delete", "/v1/freezes/{freeze_id}"),
}


@pytest.fixture
def document(api):
    reply = api.get("/v1/openapi.json")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    return reply.json


def test_the_document_is_valid_openapi(document):
    validate(document)
    assert document["info"]["title"] == "Tickwork API"


def test_every_route_is_listed(document):
    listed = {(method, path) for path, item in document["paths"].items() for method in item}
    assert listed == ROUTES


def test_success_statuses_and_schemas_match_the_contract(document):
    paths = document["paths"]
    assert "201" in paths["/v1/jobs"]["post"]["responses"]
    assert "202" in paths["/v1/jobs/{job_id}/trigger"]["post"]["responses"]
    assert "202" in paths["/v1/runs/{run_id}/retry"]["post"]["responses"]
    assert "202" in paths["/v1/dlq/redrive"]["post"]["responses"]
    create = paths["/v1/jobs"]["post"]
    assert "application/problem+json" in create["responses"]["422"]["content"]
    headers = {p["name"].lower() for p in create.get("parameters", []) if p["in"] == "header"}
    assert "idempotency-key" in headers
    listing = {p["name"] for p in paths["/v1/jobs"]["get"]["parameters"]}
    assert {"limit", "cursor", "state", "type", "name_prefix"} <= listing
    schemas = document["components"]["schemas"]
    assert {"JobSpec", "JobUpdate", "Job", "Run", "JobList", "RunList", "Problem", "ScheduleSpec"} <= set(schemas)
    assert {"id", "state", "next_run_at"} <= set(schemas["Job"]["properties"])
    run_fields = {"id", "job_id", "scheduled_for", "status", "attempts", "started_at", "finished_at"}
    assert run_fields | {"lateness_ms", "error", "result"} <= set(schemas["Run"]["properties"])


def test_workflow_routes_document_their_answers_and_ids(document):
    paths = document["paths"]
    assert "201" in paths["/v1/workflows"]["post"]["responses"]
    assert {"400", "413", "415", "422"} <= set(paths["/v1/workflows"]["post"]["responses"])
    assert "202" in paths["/v1/workflows/{workflow_id}/trigger"]["post"]["responses"]
    assert "202" in paths["/v1/workflow-runs/{workflow_run_id}/retry"]["post"]["responses"]
    for path, method in [
        ("/v1/workflows/{workflow_id}", "delete"),
        ("/v1/workflows/{workflow_id}/pause", "post"),
        ("/v1/workflows/{workflow_id}/resume", "post"),
        ("/v1/workflow-runs/{workflow_run_id}/cancel", "post"),
        ("/v1/workflow-runs/{workflow_run_id}/retry", "post"),
    ]:
        assert {"404", "409"} <= set(paths[path][method]["responses"]), (method, path)
    listing = {p["name"] for p in paths["/v1/workflows"]["get"]["parameters"]}
    assert {"limit", "cursor", "state", "name_prefix"} <= listing
    runs = {p["name"] for p in paths["/v1/workflows/{workflow_id}/runs"]["get"]["parameters"]}
    assert {"limit", "cursor", "status"} <= runs

    def id_schema(path: str, method: str) -> dict:
        (param,) = [p for p in paths[path][method]["parameters"] if p["in"] == "path"]
        return param["schema"]

    assert id_schema("/v1/workflows/{workflow_id}", "get")["pattern"] == "^w[0-9a-z]{25}$"
    assert id_schema("/v1/workflow-runs/{workflow_run_id}", "get")["pattern"] == r"^w[0-9a-z]{25}\.[0-9]{13}(\.m)?$"
    # A step's run is a run: the longest step run id (a 64-character step id) fits the runs routes' parameter.
    longest = "w" + "0" * 25 + ".1795262400000.m.s-" + "s" * 64
    assert id_schema("/v1/runs/{run_id}", "get")["maxLength"] >= len(longest)

    schemas = document["components"]["schemas"]
    assert {"WorkflowSpec", "WorkflowUpdate", "Workflow", "WorkflowStep", "WorkflowList"} <= set(schemas)
    assert {"WorkflowRun", "WorkflowRunList", "StepRun", "TriggerRule"} <= set(schemas)
    assert set(schemas["TriggerRule"]["enum"]) == {
        "all_success", "all_done", "all_failed", "one_success", "one_failed", "none_failed"
    }  # fmt: skip
    step = schemas["WorkflowSpec"]["properties"]["steps"]
    assert (step["minItems"], step["maxItems"]) == (1, 100)
    assert {"echo", "http", "lambda"} <= set(step["items"]["allOf"][1]["properties"]["type"]["enum"])
    assert {b["properties"]["type"]["const"] for b in step["items"]["oneOf"]} >= {"echo", "http", "lambda"}
    assert {"status", "run_id", "skip_reason", "attempts", "started_at", "finished_at"} <= set(
        schemas["StepRun"]["properties"]
    )


def test_a_patchs_payload_is_documented_as_one_of_the_types_payloads_checked_against_the_jobs_own(document, api):
    """PATCH carries no `type` (it never changes), so the document cannot say which payload model applies: it
    says the payload is one of the registered types' payloads (anyOf: they overlap, echo takes any object)
    and that the server checks it against the job's own type's."""
    from tickwork.jobtypes import registry

    payload = document["components"]["schemas"]["JobUpdate"]["properties"]["payload"]
    assert payload["type"] == "object"
    assert "the job's own `type`" in payload["description"]
    branches = {branch["title"]: branch for branch in payload["anyOf"]}
    assert set(branches) == set(registry.names())
    assert branches["http"]["required"] == ["url"]
    assert branches["http"]["additionalProperties"] is False

    # What the description says, the server does: a payload of another type's shape is refused for this job.
    hook = api.create(type="http", payload={"url": "https://example.com/hook"})
    echo = api.create(type="echo", payload={})
    echo_payload = {"fail_attempts": 1}
    refused = api.patch(f"/v1/jobs/{hook['id']}", {"payload": echo_payload})
    assert refused.status == 422
    assert set(refused.fields) == {"payload.url", "payload.fail_attempts"}
    assert api.get(f"/v1/jobs/{hook['id']}").json["payload"] == hook["payload"]
    assert api.patch(f"/v1/jobs/{echo['id']}", {"payload": echo_payload}).json["payload"] == echo_payload


LINK_SOURCES = {
    ("/v1/jobs", "post", "201"): "job_id",
    ("/v1/jobs/{job_id}/trigger", "post", "202"): "run_id",
    ("/v1/workflows", "post", "201"): "workflow_id",
    ("/v1/workflows/{workflow_id}/trigger", "post", "202"): "workflow_run_id",
}


@pytest.mark.parametrize(("source", "parameter"), LINK_SOURCES.items(), ids=LINK_SOURCES.values())
def test_links_lead_from_what_creates_an_id_to_every_operation_that_takes_it(document, source, parameter):
    path, method, status = source
    paths = document["paths"]
    targets = set()
    for link in paths[path][method]["responses"][status]["links"].values():
        assert link["parameters"] == {parameter: "$response.body#/id"}
        pointer, target_method = link["operationRef"].removeprefix("#/paths/").rsplit("/", 1)
        target_path = pointer.replace("~1", "/").replace("~0", "~")
        operation = paths[target_path][target_method]
        assert parameter in {p["name"] for p in operation["parameters"] if p["in"] == "path"}
        targets.add((target_method, target_path))
    takes_it = {
        (m, p) for p, item in paths.items() for m in item if p.endswith(f"{{{parameter}}}") or f"{{{parameter}}}/" in p
    }
    assert targets == takes_it


def test_get_openapi_json_builds_the_document_on_every_request(api, monkeypatch):
    """Found over HTTP (tests/e2e/test_schemathesis_http.py): building the document takes about half a second of
    CPU, and GET /v1/openapi.json answered in over 2 s on a busy machine. The document is fixed once the routes are
    registered: the process builds it once."""
    from api import app as api_app

    built = []
    build = api_app.app.get_openapi_json_schema

    def counted(**kwargs):
        built.append(1)
        return build(**kwargs)

    monkeypatch.setattr(api_app.app, "get_openapi_json_schema", counted)
    first, second = api.get("/v1/openapi.json"), api.get("/v1/openapi.json")
    assert first.status == second.status == 200
    assert first.json == second.json
    assert len(built) <= 1


def test_the_committed_document_is_what_the_routes_build():
    """functions/api/openapi.json is served as it is (with the built-in job types): it must be what the routes build
    now. In a process of its own, whose registry holds only the built-in types (this one holds the tests' too)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "tickwork_local.generate.openapi_file", "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_function_with_the_built_in_job_types_serves_the_committed_document_without_building_it(monkeypatch):
    """No execution environment spends the CPU of building the document on its first request for it (or for a
    method a path does not take): over a second at Lambda's 512 MB, past the 2 s every answer must come within."""
    from api import app as api_app

    committed = api_app.OPENAPI_FILE.read_text(encoding="utf-8")
    built_in = json.loads(committed)["components"]["schemas"]["JobSpec"]["properties"]["type"]["enum"]
    monkeypatch.setattr(api_app.registry, "names", lambda: list(built_in))

    def refuse_to_build(**_: Any) -> str:
        raise AssertionError("the document was built")

    monkeypatch.setattr(api_app.app, "get_openapi_json_schema", refuse_to_build)
    assert api_app._openapi_document_for.__wrapped__(tuple(built_in)) == committed


def test_a_function_with_job_types_of_its_own_builds_the_document_that_describes_them():
    """JobTypeModules add types (here the tests' own): the committed document does not list them, so it is built."""
    from api import app as api_app

    import tests.testing_jobtypes  # noqa: F401 - registers the tests' types

    document = json.loads(api_app._openapi_document_for.__wrapped__(tuple(api_app.registry.names())))
    types = document["components"]["schemas"]["JobSpec"]["properties"]["type"]["enum"]
    assert types == api_app.registry.names()
    assert set(types) > {"echo", "http", "lambda"}


def test_the_document_describes_the_job_types_registered_when_it_is_asked_for(api, monkeypatch):
    """The document is kept once built, for the job types it was built with: a type registered after it was first
    served (a module imported later in the same process) appears in the next, and the document served before it is
    served again once the registry is as it was."""
    from pydantic import BaseModel
    from tickwork.jobtypes.registry import JobType, registry

    def enum(reply) -> list[str]:
        return reply.json["components"]["schemas"]["JobSpec"]["properties"]["type"]["enum"]

    before = api.get("/v1/openapi.json")
    assert enum(before) == registry.names()

    class ProbePayload(BaseModel):
        probe: int

    monkeypatch.setitem(registry._types, "openapi-probe", JobType("openapi-probe", ProbePayload, lambda p, c: None))
    after = api.get("/v1/openapi.json")
    assert "openapi-probe" in enum(after)
    assert "openapi-probe" not in enum(before)

    monkeypatch.undo()
    assert api.get("/v1/openapi.json").json == before.json
