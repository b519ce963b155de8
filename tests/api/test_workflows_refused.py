"""What the workflow routes refuse: bad definitions (422 naming the field, nothing written, nothing listed
afterwards), malformed ids, and other tenants' workflows and runs (404, as if they did not exist)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import ACME, GLOBEX
from tests.api.test_bad_input import WRITES
from tests.api.test_workflow_routes import DIAMOND, create, run_to_the_end, spec, trigger, with_step

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")


def _steps(*steps: dict[str, Any]) -> dict[str, Any]:
    return spec(steps=[{"type": "echo", **step} for step in steps])


# (case id, request body, the field named, part of its message)
BAD_DEFINITIONS: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "a cycle, named",
        _steps({"id": "a"}, {"id": "b", "depends_on": ["a", "d"]}, {"id": "c", "depends_on": ["b"]}, {"id": "d", "depends_on": ["c"]}),
        "steps[2].depends_on",
        "cycle: c -> d -> b -> c",  # as work would flow round it, named at the step it starts from
    ),
    ("an unknown step", _steps({"id": "a"}, {"id": "b"}, {"id": "c", "depends_on": ["a", "nope"]}), "steps[2].depends_on[1]", "unknown step 'nope'"),
    ("a duplicate step id", _steps({"id": "a"}, {"id": "a"}), "steps[1].id", "duplicate step id"),
    ("a step depending on itself", _steps({"id": "a", "depends_on": ["a"]}), "steps[0].depends_on[0]", "itself"),
    ("a dependency listed twice", _steps({"id": "a"}, {"id": "b", "depends_on": ["a", "a"]}), "steps[1].depends_on[1]", "twice"),
    (
        "a condition reading a step not upstream",
        _steps({"id": "a", "condition": "steps.b.result.ok"}, {"id": "b", "depends_on": ["a"]}),
        "steps[0].condition",
        "not upstream",
    ),
    (
        "a $from reading a step not upstream",
        _steps({"id": "a"}, {"id": "b"}, {"id": "c", "depends_on": ["a"], "payload": {"x": {"$from": "steps.b.result"}}}),
        "steps[2].payload.x.$from",
        "not upstream",
    ),
    ("an invalid JMESPath condition", _steps({"id": "a"}, {"id": "b", "depends_on": ["a"], "condition": "steps.a.[["}), "steps[1].condition", "JMESPath"),
    ("an unknown trigger rule", _steps({"id": "a"}, {"id": "b", "depends_on": ["a"], "trigger_rule": "sometimes"}), "steps[1].trigger_rule", ""),
    ("no steps", spec(steps=[]), "steps", "at least 1"),
    ("101 steps", _steps(*({"id": f"s{i}"} for i in range(101))), "steps", "at most 100"),
    ("an unknown type in a step", spec(steps=[{"id": "a", "type": "carrier-pigeon"}]), "steps[0].type", "carrier-pigeon"),
    (
        "a bad payload in a step",
        spec(steps=[{"id": "a", "type": "echo"}, {"id": "b", "type": "http", "payload": {"url": "http://127.0.0.1:8080/hook"}}]),
        "steps[1].payload.url",
        "url",
    ),
    ("a step id that is not one", _steps({"id": "no spaces"}), "steps[0].id", "pattern"),
    ("an unknown step field", _steps({"id": "a", "colour": "blue"}), "steps[0].colour", ""),
    ("a job's field", spec(type="echo"), "type", ""),
    ("a compensation of an unknown type", _steps({"id": "a", "compensate": {"type": "carrier-pigeon"}}), "steps[0].compensate.type", "carrier-pigeon"),
    (
        "a compensation with a bad payload",
        _steps({"id": "a"}, {"id": "b", "depends_on": ["a"], "compensate": {"type": "http", "payload": {"url": "ftp://example.com/x"}}}),
        "steps[1].compensate.payload.url",
        "http",
    ),
    (
        "a compensation's $from reading a step neither itself nor upstream",
        _steps({"id": "a"}, {"id": "b", "compensate": {"type": "echo", "payload": {"x": {"$from": "steps.a.result"}}}}),
        "steps[1].compensate.payload.x.$from",
        "neither 'b' itself nor upstream",
    ),
    ("irreversible with a compensate", _steps({"id": "a", "irreversible": True, "compensate": {"type": "echo"}}), "steps[0].irreversible", "irreversible"),
    ("a step deadline of 0", _steps({"id": "a", "deadline": {"within_seconds": 0}}), "steps[0].deadline.within_seconds", "greater than 0"),
    ("a negative step deadline", _steps({"id": "a"}, {"id": "b", "deadline": {"within_seconds": -60}}), "steps[1].deadline.within_seconds", "greater than 0"),
    ("an unknown step on_miss", _steps({"id": "a", "deadline": {"within_seconds": 60, "on_miss": "PANIC"}}), "steps[0].deadline.on_miss", ""),
    ("an unknown compensation order", spec(compensation={"order": "random"}), "compensation.order", ""),
    ("an unknown compensation on_error", spec(compensation={"on_error": "shrug"}), "compensation.on_error", ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("body", "field", "message"), [c[1:] for c in BAD_DEFINITIONS], ids=[c[0] for c in BAD_DEFINITIONS]
)
def test_a_bad_definition_is_refused_naming_the_field_and_nothing_is_written(api, pipeline, body, field, message):
    pipeline.calls.clear()
    reply = api.post("/v1/workflows", body)
    assert reply.status == 422, reply.text
    assert reply.headers["content-type"] == "application/problem+json"
    named = {e["field"]: e["message"] for e in reply.json["errors"]}
    assert field in named, reply.json
    assert message in named[field], reply.json
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get("/v1/workflows").json == {"items": [], "next_cursor": None}


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [c[1:] for c in BAD_DEFINITIONS if c[2].startswith("steps")],
    ids=[c[0] for c in BAD_DEFINITIONS if c[2].startswith("steps")],
)
def test_a_patch_with_bad_steps_is_refused_and_changes_nothing(api, pipeline, body, field, message):
    workflow = create(api)
    pipeline.calls.clear()
    reply = api.patch(f"/v1/workflows/{workflow['id']}", {"steps": body["steps"]})
    assert reply.status == 422, reply.text
    assert field in reply.fields, reply.json
    assert {op: pipeline.calls.count(op) for op in WRITES} == dict.fromkeys(WRITES, 0)
    assert api.get(f"/v1/workflows/{workflow['id']}").json == workflow


def test_a_patch_with_null_is_refused(api):
    workflow = create(api)
    reply = api.patch(f"/v1/workflows/{workflow['id']}", {"steps": None})
    assert reply.status == 422
    assert reply.fields == ["steps"]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/workflows/j" + "0" * 25, "workflow_id"),
        ("/v1/workflows/w0000/runs", "workflow_id"),
        ("/v1/workflow-runs/w" + "0" * 25, "workflow_run_id"),
        ("/v1/workflow-runs/w" + "0" * 25 + ".1795262400000.s-a", "workflow_run_id"),
    ],
)
def test_a_malformed_id_is_refused_naming_it(api, path, field):
    reply = api.get(path)
    assert reply.status == 422, reply.text
    assert reply.fields == [field]


@pytest.mark.parametrize(
    ("query", "field"),
    [({"state": "SLEEPING"}, "state"), ({"limit": 0}, "limit"), ({"name_prefix": ""}, "name_prefix")],
)
def test_bad_listing_filters_are_refused(api, query, field):
    reply = api.get("/v1/workflows", query=query)
    assert reply.status == 422
    assert reply.fields == [field]


def test_bad_run_listing_status_is_refused(api):
    reply = api.get("/v1/workflows/w" + "0" * 25 + "/runs", query={"status": "QUEUED"})
    assert reply.status == 422  # a workflow run is never QUEUED: its steps are
    assert reply.fields == ["status"]


def test_another_tenant_can_neither_read_nor_change_nor_list(api, pipeline):
    workflow = create(api, with_step(DIAMOND, "c", payload={"fail_attempts": 9}))
    failed = run_to_the_end(api, pipeline, workflow)
    assert failed["status"] == "FAILED"
    pipeline.clock.advance(1)
    running = trigger(api, workflow)
    step_run = failed["steps"]["a"]["run_id"]
    before = api.get(f"/v1/workflows/{workflow['id']}").json
    pipeline.calls.clear()

    foreign = [
        ("GET", f"/v1/workflows/{workflow['id']}", None),
        ("PATCH", f"/v1/workflows/{workflow['id']}", {"name": "pwned"}),
        ("DELETE", f"/v1/workflows/{workflow['id']}", None),
        ("POST", f"/v1/workflows/{workflow['id']}/pause", None),
        ("POST", f"/v1/workflows/{workflow['id']}/resume", None),
        ("POST", f"/v1/workflows/{workflow['id']}/trigger", None),
        ("GET", f"/v1/workflows/{workflow['id']}/runs", None),
        ("GET", f"/v1/workflow-runs/{failed['id']}", None),
        ("POST", f"/v1/workflow-runs/{failed['id']}/retry", None),
        ("POST", f"/v1/workflow-runs/{running['id']}/cancel", None),
        ("GET", f"/v1/runs/{step_run}", None),
        ("GET", f"/v1/runs/{step_run}/result", None),
    ]
    unknown_id = "w" + "0" * 25
    for method, path, body in foreign:
        reply = api.request(method, path, body=body, identity=GLOBEX)
        assert reply.status == 404, (method, path, reply.text)
        # Indistinguishable from an id that does not exist at all.
        unknown = api.request(method, path.replace(workflow["id"], unknown_id), body=body, identity=GLOBEX)
        assert (unknown.status, unknown.json["title"]) == (404, reply.json["title"])

    assert api.get("/v1/workflows", identity=GLOBEX).json == {"items": [], "next_cursor": None}
    for op in ("PutItem", "UpdateItem", "DeleteItem", "SendMessage", "SendMessageBatch"):
        assert pipeline.calls.count(op) == 0, op
    assert api.get(f"/v1/workflows/{workflow['id']}", identity=ACME).json == before
    assert api.get(f"/v1/workflow-runs/{failed['id']}").json["status"] == "FAILED"
    assert api.get(f"/v1/workflow-runs/{running['id']}").json["status"] == "RUNNING"


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("PUT", "/v1/workflows/w" + "0" * 25, "GET, PATCH, DELETE"),
        ("DELETE", "/v1/workflows", "GET, POST"),
        ("GET", "/v1/workflows/w" + "0" * 25 + "/trigger", "POST"),
        ("DELETE", "/v1/workflow-runs/w" + "0" * 25 + ".1795262400000", "GET"),
    ],
)
def test_a_method_a_workflow_path_does_not_take_is_405_with_allow(api, method, path, allow):
    reply = api.request(method, path)
    assert reply.status == 405, reply.text
    assert reply.headers["allow"] == allow
