"""Compensation (saga) on one `tickwork dev` node, over HTTP and the CLI as a user would: the "book trip" workflow
of docs/workflows.md (reserve a flight, reserve a hotel, charge the card; the charge fails), whose two
reservations are compensated in reverse, each compensation an ordinary run with its payload from its step's
result."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import ROOT, Api, Node, cli, wait_for

pytestmark = pytest.mark.e2e

FINISHED = {"SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED", "COMPENSATED", "COMPENSATION_FAILED"}
BOOK_TRIP = json.loads((ROOT / "examples" / "workflows" / "book-trip.json").read_text())


def finished(api: Api, workflow_run_id: str) -> dict[str, Any] | None:
    run = api.get(f"/v1/workflow-runs/{workflow_run_id}")
    return run if run["status"] in FINISHED else None


def test_a_failed_trip_is_compensated_in_reverse(node: Node) -> None:
    api = node.api
    workflow = api.post("/v1/workflows", BOOK_TRIP, expect=201)
    try:
        started = api.post(f"/v1/workflows/{workflow['id']}/trigger", expect=202)
        run = wait_for(lambda: finished(api, started["id"]), 60, 0.5, "the trip to be compensated")
        steps = {sid: step["status"] for sid, step in run["steps"].items()}
        assert steps == {"reserve_flight": "SUCCEEDED", "reserve_hotel": "SUCCEEDED", "charge_card": "FAILED"}, run
        assert (run["status"], run["compensating_for"]) == ("COMPENSATED", "FAILED"), run
        # In reverse: the hotel (reserved last) is cancelled first, and the flight's starts once it has ended.
        assert list(run["compensations"]) == ["reserve_hotel", "reserve_flight"]
        hotel, flight = (api.get(f"/v1/runs/{c['run_id']}") for c in run["compensations"].values())
        assert hotel["id"] == f"{run['id']}.c-reserve_hotel"
        assert (hotel["status"], flight["status"]) == ("SUCCEEDED", "SUCCEEDED")
        assert hotel["finished_at"] <= flight["started_at"]
        assert (hotel["step_id"], hotel["workflow_run_id"]) == ("reserve_hotel", run["id"])
        assert api.get(f"/v1/runs/{hotel['id']}/result") == {"cancel": "HO-77"}
        assert api.get(f"/v1/runs/{flight['id']}/result") == {"cancel": "FL-1042"}
        # A compensated run is not retried: its compensations undid what it did.
        api.call("POST", f"/v1/workflow-runs/{run['id']}/retry", expect=409)

        shown = cli(node, "workflows", "show-run", run["id"], timeout=90)
        assert list(shown["compensations"]) == ["reserve_hotel", "reserve_flight"]
    finally:
        api.call("DELETE", f"/v1/workflows/{workflow['id']}", expect=(200, 409))
