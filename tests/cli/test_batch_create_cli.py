"""`tickwork jobs create-batch -f FILE`: up to 25 jobs from a JSON list (or {"jobs": [...]}) in one request, through
POST /v1/bulk/jobs/create, a line per job; exit status 1 when one was not created; a retry with the same
--idempotency-key creates only what the first did not."""

from __future__ import annotations

import json
from pathlib import Path


def _jobs(*names: str) -> list[dict]:
    return [{"name": name, "type": "echo", "schedule": {"rate": "1 hour"}} for name in names]


def test_a_file_of_jobs_is_created_in_one_command(cli, tmp_path: Path):
    file = tmp_path / "jobs.json"
    file.write_text(json.dumps(_jobs("a", "b")))
    answer = cli.json("jobs", "create-batch", "-f", str(file))
    assert [(item["outcome"], item["job"]["name"]) for item in answer["items"]] == [("created", "a"), ("created", "b")]
    listed = cli.json("jobs", "list")
    assert sorted(job["name"] for job in listed["items"]) == ["a", "b"]

    file.write_text(json.dumps({"jobs": _jobs("c")}))
    table = cli("jobs", "create-batch", "--file", str(file), output="table")
    assert table.exit_code == 0, table.stdout
    assert table.stdout.splitlines()[0].split() == ["#", "OUTCOME", "JOB", "REASON"]


def test_a_bad_job_exits_1_naming_its_field_and_a_retry_with_the_key_creates_only_it(cli, tmp_path: Path):
    file = tmp_path / "jobs.json"
    file.write_text(json.dumps([*_jobs("good"), {"name": "typeless", "schedule": {"rate": "1 hour"}}]))
    first = cli("jobs", "create-batch", "-f", str(file), "--idempotency-key", "import-1")
    assert first.exit_code == 1
    items = json.loads(first.stdout)["items"]
    assert [item["outcome"] for item in items] == ["created", "invalid"]
    assert items[1]["errors"][0]["field"] == "jobs[1].type"

    file.write_text(json.dumps(_jobs("good", "typeless")))
    again = cli.json("jobs", "create-batch", "-f", str(file), "--idempotency-key", "import-1")
    assert [item["outcome"] for item in again["items"]] == ["replayed", "created"]
    assert len(cli.json("jobs", "list")["items"]) == 2


def test_a_file_that_is_not_a_list_of_jobs_is_a_usage_error(cli, tmp_path: Path):
    file = tmp_path / "jobs.json"
    file.write_text(json.dumps({"name": "one job"}))
    assert cli("jobs", "create-batch", "-f", str(file)).exit_code == 2


def test_the_typed_client_creates_a_batch_and_a_repeat_with_its_key_replays_it(cli):
    from tickwork.control.batch_create import BatchCreateResult, BatchOutcome
    from tickwork_cli.api_client import Client

    client = Client("http://127.0.0.1:3000")
    first = client.create_jobs_in_batch({"jobs": _jobs("x", "y")}, idempotency_key="typed-1")
    assert isinstance(first, BatchCreateResult)
    assert [item.outcome for item in first.items] == [BatchOutcome.CREATED] * 2
    again = client.create_jobs_in_batch({"jobs": _jobs("x", "y")}, idempotency_key="typed-1")
    assert [item.outcome for item in again.items] == [BatchOutcome.REPLAYED] * 2
    assert [item.job.id for item in again.items if item.job] == [item.job.id for item in first.items if item.job]
