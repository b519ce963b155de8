"""The audit trail (docs/security.md "Audit trail"): each change through the API writes one record, reads none."""

from __future__ import annotations

from tests.api.conftest import ApiClient


def test_a_pause_is_recorded_with_its_actor(api: ApiClient) -> None:
    job = api.create()
    assert api.post(f"/v1/jobs/{job['id']}/pause").status == 200
    reply = api.get("/v1/audit")
    assert reply.status == 200, reply.text
    records = reply.json["items"]
    assert [r["action"] for r in records] == ["job.pause", "job.create"]
    assert records[0]["actor"]["display"] == "tickwork-tenant-acme/alice"
    assert records[0]["changes"]["state"] == {"before": "ACTIVE", "after": "PAUSED"}
    shown = api.get(f"/v1/jobs/{job['id']}").json
    assert shown["paused_by"] == shown["created_by"] == "tickwork-tenant-acme/alice"
