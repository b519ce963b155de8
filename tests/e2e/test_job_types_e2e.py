"""A job type of the user's own, on one `tickwork dev --job-types acme_jobs` node, over HTTP as a user would: the
worked example of docs/job-types.md (examples/job-types/layer/acme_jobs), imported from its plain folder. Its payload
is checked at create with its own model, and a job of it runs to SUCCEEDED with the invoice's totals as result."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import ROOT, Node, instant_in, running_node, wait_for

pytestmark = pytest.mark.e2e

EXAMPLE_LAYER = ROOT / "examples" / "job-types" / "layer"
INVOICE = json.loads((ROOT / "examples" / "job-types" / "invoice.json").read_text())  # its sample payload


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    with running_node(
        "job-types", "--tick-seconds", "2", "--job-types", "acme_jobs", "--job-types-path", str(EXAMPLE_LAYER)
    ) as started:
        yield started


def test_a_job_of_the_users_own_type_runs_to_its_result(node: Node) -> None:
    api = node.api
    assert "invoice_total" in node.proc.output()  # the banner lists the types the functions loaded

    job = api.create_job(name="invoice", type="invoice_total", payload=INVOICE, schedule={"at": instant_in(2)})
    run = wait_for(
        lambda: next((r for r in api.runs(job["id"]) if r["status"] in {"SUCCEEDED", "FAILED"}), None),
        30,
        0.5,
        "the invoice's run to finish",
    )

    assert run["status"] == "SUCCEEDED", run
    assert api.get(f"/v1/runs/{run['id']}/result") == {
        "customer": "Initech",
        "currency": "EUR",
        "lines": 2,
        "subtotal": "52.00",
        "tax": "10.40",
        "total": "62.40",
    }


def test_its_payload_is_checked_at_create_with_its_own_model(node: Node) -> None:
    bad = {**INVOICE, "lines": [{"description": "Staplers", "quantity": 0, "unit_price": "7.25"}]}
    problem = node.api.post(
        "/v1/jobs",
        {"name": "invoice", "type": "invoice_total", "payload": bad, "schedule": {"at": instant_in(60)}},
        expect=422,
    )
    assert [e["field"] for e in problem["errors"]] == ["payload.lines[0].quantity"]
    document = node.api.get("/v1/openapi.json")
    assert "invoice_total" in document["components"]["schemas"]["JobSpec"]["properties"]["type"]["enum"]
