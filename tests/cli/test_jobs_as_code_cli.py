"""`tickwork plan` and `tickwork apply` (docs/jobs-as-code.md), in process against the API handler: files of jobs,
workflows and calendars made so, idempotently, in dependency order; a hand's change shown as drift; a prune that
cancels only its own source's; a bad file named with its file and line."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from tests.cli.docs_examples import DOCS, marked_blocks, run_console

NIGHTLY = """
kind: job
name: nightly-export
type: echo
payload: {table: orders}
schedule:
  cron: "0 3 * * *"
  timezone: Europe/Paris
calendars: [company-holidays]
tags: {team: data}
---
kind: calendar
name: company-holidays
mode: exclude
windows:
  - dates: ["2026-12-25", "2027-01-01"]
"""

HOURLY = """[
  {"kind": "job", "name": "hourly-sync", "type": "echo", "schedule": {"rate": "1 hour"}, "retry": {"max_attempts": 5}}
]
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "nightly.yaml").write_text(NIGHTLY)
    (tmp_path / "hourly.json").write_text(HOURLY)
    return tmp_path


def _jobs(cli: Any) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in cli.json("jobs", "list", "--all")["items"] if j["state"] != "CANCELLED"}


def test_plan_then_apply_creates_calendars_before_the_jobs_that_name_them_and_again_changes_nothing(cli, folder):
    planned = cli("plan", "-f", str(folder), "--source", "data", output=None)
    assert planned.exit_code == 2, planned.output
    assert planned.stdout.splitlines() == [
        "+ calendar company-holidays",
        "+ job hourly-sync",
        "+ job nightly-export",
        "Plan: 3 to create, 0 to change, 0 to cancel.",
    ]
    assert _jobs(cli) == {}  # a plan changes nothing

    applied = cli("apply", "-f", str(folder), "--source", "data", output=None)
    assert applied.exit_code == 0, applied.output
    assert applied.stdout.splitlines()[-3:] == [
        "created calendar company-holidays",
        "created job hourly-sync",
        "created job nightly-export",
    ]
    (calendar,) = cli.json("calendars", "list")["items"]
    jobs = _jobs(cli)
    assert jobs["nightly-export"]["calendars"] == [calendar["id"]]
    assert jobs["nightly-export"]["tags"] == {"team": "data", "managed_by": "data"}
    assert jobs["hourly-sync"]["retry"]["max_attempts"] == 5

    again = cli("apply", "-f", str(folder), "--source", "data", output=None)
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines() == ["No changes: the API matches the files."]
    assert {n: j["version"] for n, j in _jobs(cli).items()} == {n: j["version"] for n, j in jobs.items()}
    assert cli("plan", "-f", str(folder), "--source", "data", output=None).exit_code == 0


def test_a_changed_file_is_a_field_diff_and_apply_changes_only_that(cli, folder):
    assert cli("apply", "-f", str(folder), "--source", "data", output=None).exit_code == 0
    before = _jobs(cli)["nightly-export"]
    (folder / "nightly.yaml").write_text(NIGHTLY.replace('cron: "0 3 * * *"', 'cron: "30 4 * * *"'))

    planned = cli("plan", "-f", str(folder), "--source", "data", output=None)
    assert planned.exit_code == 2
    assert planned.stdout.splitlines() == [
        f"~ job nightly-export ({before['id']})",
        '    schedule.cron: "0 3 * * *" -> "30 4 * * *"',
        "Plan: 0 to create, 1 to change, 0 to cancel.",
    ]
    assert cli("apply", "-f", str(folder), "--source", "data", output=None).exit_code == 0
    after = _jobs(cli)["nightly-export"]
    assert (after["id"], after["schedule"]["cron"], after["schedule"]["timezone"]) == (
        before["id"],
        "30 4 * * *",
        "Europe/Paris",
    )
    assert after["version"] == before["version"] + 1


def test_a_field_changed_by_hand_shows_as_drift_and_apply_puts_it_back(cli, folder):
    assert cli("apply", "-f", str(folder), "--source", "data", output=None).exit_code == 0
    job = _jobs(cli)["hourly-sync"]
    cli.json("jobs", "update", job["id"], "--priority", "9", "--max-attempts", "2")

    planned = cli("plan", "-f", str(folder), "--source", "data", output=None)
    assert planned.exit_code == 2
    assert "    retry.max_attempts: 2 -> 5" in planned.stdout.splitlines()
    assert "priority" not in planned.stdout  # the file does not manage it
    assert cli("apply", "-f", str(folder), "--source", "data", output=None).exit_code == 0
    assert _jobs(cli)["hourly-sync"]["retry"]["max_attempts"] == 5


def test_prune_cancels_only_this_sources_jobs_that_the_files_no_longer_define_and_two_sources_live_side_by_side(
    cli, folder, tmp_path_factory
):
    other = tmp_path_factory.mktemp("ops")
    (other / "ops.yaml").write_text("kind: job\nname: disk-report\ntype: echo\nschedule: {rate: 1 day}\n")
    assert cli("apply", "-f", str(folder), "--source", "data", output=None).exit_code == 0
    assert cli("apply", "-f", str(other), "--source", "ops", "--prune", output=None).exit_code == 0
    hand_made = cli.json("jobs", "create", "--name", "by-hand", "--type", "echo", "--rate", "1 hour")
    assert set(_jobs(cli)) == {"nightly-export", "hourly-sync", "disk-report", "by-hand"}

    (folder / "hourly.json").unlink()
    planned = cli("plan", "-f", str(folder), "--source", "data", output=None)
    assert planned.stdout.splitlines() == ["No changes: the API matches the files."]  # without --prune
    pruned = cli("plan", "-f", str(folder), "--source", "data", "--prune", output=None)
    hourly = _jobs(cli)["hourly-sync"]
    assert pruned.stdout.splitlines() == [
        f"- job hourly-sync ({hourly['id']}): cancel",
        "Plan: 0 to create, 0 to change, 1 to cancel.",
    ]
    assert cli("apply", "-f", str(folder), "--source", "data", "--prune", output=None).exit_code == 0
    assert set(_jobs(cli)) == {"nightly-export", "disk-report", "by-hand"}
    assert cli.json("jobs", "get", hand_made["id"])["state"] == "ACTIVE"
    # The other source's files still match: applying data's touched none of ops'.
    assert cli("plan", "-f", str(other), "--source", "ops", "--prune", output=None).exit_code == 0


def test_a_field_the_api_refuses_is_named_with_its_file_and_line(cli, tmp_path):
    (tmp_path / "bad.yaml").write_text('kind: job\nname: broken\ntype: echo\nschedule:\n  cron: "99 * * * *"\n')
    result = cli("apply", "-f", str(tmp_path), "--source", "data", output=None)
    assert result.exit_code == 1
    assert f"{tmp_path / 'bad.yaml'}:5: schedule.cron:" in result.stderr
    assert _jobs(cli) == {}


def test_a_file_that_is_not_yaml_or_names_no_kind_is_refused_with_its_line_and_nothing_is_done(cli, tmp_path):
    (tmp_path / "a.yaml").write_text("kind: job\nname: fine\ntype: echo\nschedule: {rate: 1 hour}\n")
    (tmp_path / "b.yaml").write_text("kind: job\nname: [unclosed\n")
    result = cli("plan", "-f", str(tmp_path), output=None)
    assert (result.exit_code, result.stdout) == (1, "")
    assert f"{tmp_path / 'b.yaml'}:" in result.stderr
    assert "not valid YAML or JSON" in result.stderr

    (tmp_path / "b.yaml").write_text("name: fine-too\n---\nkind: cronjob\nname: x\n")
    result = cli("apply", "-f", str(tmp_path), output=None)
    assert result.exit_code == 1
    assert f"{tmp_path / 'b.yaml'}:1: kind must be one of calendar, job, workflow, freeze, not None" in result.stderr
    assert _jobs(cli) == {}


def test_a_name_a_hand_made_job_has_stops_plan_and_apply_and_adopt_takes_it_over(cli, folder):
    hand_made = cli.json("jobs", "create", "--name", "hourly-sync", "--type", "echo", "--rate", "2 hours")

    planned = cli("plan", "-f", str(folder), "--source", "data", output=None)
    assert planned.exit_code == 1
    assert planned.stdout.splitlines() == [
        "+ calendar company-holidays",
        "+ job nightly-export",
        f"! job hourly-sync: the name is job {hand_made['id']}'s, made by hand: --adopt makes it this source's, "
        "or rename one",
        "Plan: 2 to create, 0 to change, 0 to cancel. 1 in conflict.",
    ]
    assert f"{folder / 'hourly.json'}:2: 'hourly-sync': already the name of a job or workflow" in planned.stderr
    refused = cli("apply", "-f", str(folder), "--source", "data", output=None)
    assert refused.exit_code == 1
    assert set(_jobs(cli)) == {"hourly-sync"}  # nothing done, no second hourly-sync
    assert cli.json("calendars", "list")["items"] == []

    adopting = cli("plan", "-f", str(folder), "--source", "data", "--adopt", output=None)
    assert adopting.exit_code == 2, adopting.output
    assert adopting.stdout.splitlines() == [
        "+ calendar company-holidays",
        f"~ job hourly-sync ({hand_made['id']}): adopt (made by hand)",
        '    schedule.rate: "2 hours" -> "1 hour"',
        "    retry.max_attempts: 3 -> 5",
        '    tags: {} -> {"managed_by": "data"}',
        "+ job nightly-export",
        "Plan: 2 to create, 1 to adopt, 0 to change, 0 to cancel.",
    ]
    adopted = cli("apply", "-f", str(folder), "--source", "data", "--adopt", output=None)
    assert adopted.exit_code == 0, adopted.output
    assert "adopted job hourly-sync" in adopted.stdout.splitlines()
    jobs = _jobs(cli)
    assert set(jobs) == {"hourly-sync", "nightly-export"}
    assert (jobs["hourly-sync"]["id"], jobs["hourly-sync"]["tags"]) == (hand_made["id"], {"managed_by": "data"})
    assert jobs["hourly-sync"]["schedule"]["rate"] == "1 hour"
    # Now this source's: the plain plan matches, and a prune may cancel it.
    assert cli("plan", "-f", str(folder), "--source", "data", output=None).exit_code == 0
    (folder / "hourly.json").unlink()
    assert cli("apply", "-f", str(folder), "--source", "data", "--prune", output=None).exit_code == 0
    assert cli.json("jobs", "get", hand_made["id"])["state"] == "CANCELLED"


def test_a_name_another_source_manages_is_refused_even_with_adopt(cli, folder, tmp_path_factory):
    other = tmp_path_factory.mktemp("ops")
    (other / "ops.json").write_text(HOURLY)
    assert cli("apply", "-f", str(other), "--source", "ops", output=None).exit_code == 0
    theirs = _jobs(cli)["hourly-sync"]

    refused = cli("apply", "-f", str(folder), "--source", "data", "--adopt", output=None)
    assert refused.exit_code == 1
    assert f"! job hourly-sync: the name is job {theirs['id']}'s, managed by source 'ops': rename one" in (
        refused.stdout.splitlines()
    )
    assert list(_jobs(cli)) == ["hourly-sync"]
    assert _jobs(cli)["hourly-sync"]["version"] == theirs["version"]


FREEZE = """
kind: freeze
name: release
selector: {tags: {team: data}}
from: "2026-12-01T00:00:00Z"
until: "2026-12-24T00:00:00Z"
reason: release 4.2
"""


def _freezes(cli: Any) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in cli.json("freezes", "list")["items"]}


def test_a_freeze_is_made_once_replaced_when_its_file_changes_and_lifted_by_a_prune_leaving_a_hand_made_one(
    cli, tmp_path
):
    hand_made = cli.json("freezes", "create", "--tag", "team=data", "--for", "1h", "--reason", "incident")
    (tmp_path / "freeze.yaml").write_text(FREEZE)
    planned = cli("plan", "-f", str(tmp_path), "--source", "data", output=None)
    assert planned.stdout.splitlines() == ["+ freeze release", "Plan: 1 to create, 0 to change, 0 to cancel."]
    applied = cli("apply", "-f", str(tmp_path), "--source", "data", output=None)
    assert applied.exit_code == 0, applied.output
    (made,) = [f for f in _freezes(cli).values() if f["id"] != hand_made["id"]]
    assert (made["reason"], made["until"]) == (
        "release 4.2 [managed_by: data, name: release]",
        "2026-12-24T00:00:00.000Z",
    )
    assert cli("plan", "-f", str(tmp_path), "--source", "data", output=None).exit_code == 0

    (tmp_path / "freeze.yaml").write_text(FREEZE.replace("2026-12-24", "2026-12-31"))
    planned = cli("plan", "-f", str(tmp_path), "--source", "data", output=None)
    assert planned.stdout.splitlines() == [
        f"-/+ freeze release ({made['id']}): replace (lifted, made anew)",
        '    until: "2026-12-24T00:00:00.000Z" -> "2026-12-31T00:00:00Z"',
        "Plan: 0 to create, 0 to change, 1 to replace, 0 to cancel.",
    ]
    replaced = cli("apply", "-f", str(tmp_path), "--source", "data", output=None)
    assert replaced.stdout.splitlines()[-1] == "replaced freeze release"
    freezes = _freezes(cli)
    assert freezes[made["id"]]["lifted_at"] is not None
    (anew,) = [f for f in freezes.values() if f["id"] not in (made["id"], hand_made["id"])]
    assert (anew["until"], anew["lifted_at"]) == ("2026-12-31T00:00:00.000Z", None)
    assert cli("plan", "-f", str(tmp_path), "--source", "data", output=None).exit_code == 0

    (tmp_path / "freeze.yaml").unlink()
    (tmp_path / "other.yaml").write_text("kind: calendar\nname: none\nwindows: [{dates: [2026-12-25]}]\n")
    pruned = cli("apply", "-f", str(tmp_path), "--source", "data", "--prune", output=None)
    assert pruned.exit_code == 0, pruned.output
    assert f"- freeze release ({anew['id']}): lift" in pruned.stdout.splitlines()
    assert "lifted freeze release" in pruned.stdout.splitlines()
    freezes = _freezes(cli)
    assert freezes[anew["id"]]["lifted_at"] is not None
    assert freezes[hand_made["id"]]["lifted_at"] is None


def test_another_tenants_freeze_of_the_same_source_and_name_is_never_taken_for_this_tenants(cli, tmp_path):
    """The local caller is an admin, whose listing holds every tenant's freezes: only its own are the files'."""
    from tickwork.control.callers import Caller
    from tickwork.model.freezes import FreezeSpec

    spec = {"selector": {"all": True}, "until": "2026-12-20T00:00:00Z"}
    theirs = cli.pipeline.services.freezes.create(
        Caller("acme"), FreezeSpec.model_validate({**spec, "reason": "release 4.2 [managed_by: data, name: release]"})
    )
    (tmp_path / "freeze.yaml").write_text(FREEZE)
    planned = cli("plan", "-f", str(tmp_path), "--source", "data", "--prune", output=None)
    assert planned.stdout.splitlines() == ["+ freeze release", "Plan: 1 to create, 0 to change, 0 to cancel."]
    (tmp_path / "freeze.yaml").unlink()
    (tmp_path / "other.yaml").write_text("kind: calendar\nname: none\nwindows: [{dates: [2026-12-25]}]\n")
    assert cli("apply", "-f", str(tmp_path), "--source", "data", "--prune", output=None).exit_code == 0
    assert _freezes(cli)[theirs.id]["lifted_at"] is None


def test_a_freeze_for_a_number_of_seconds_is_refused_with_its_line(cli, tmp_path):
    (tmp_path / "freeze.yaml").write_text(FREEZE.replace('until: "2026-12-24T00:00:00Z"', "for_seconds: 3600"))
    result = cli("apply", "-f", str(tmp_path), "--source", "data", output=None)
    assert result.exit_code == 1
    assert f"{tmp_path / 'freeze.yaml'}:6: for_seconds: a freeze in a file ends at an instant" in result.stderr
    assert _freezes(cli) == {}


DOCS_MARKER = "<!-- jobs-as-code example: run in process by tests/cli/test_jobs_as_code_cli.py -->"


def test_the_pages_example_runs_as_written(cli, tmp_path, monkeypatch):
    """docs/jobs-as-code.md's marked blocks: its files (each named by its first line's comment), then its commands,
    each printing what the page shows."""
    blocks = marked_blocks(DOCS_MARKER)
    assert [language for language, _ in blocks] == ["yaml", "console"]
    for language, body in blocks:
        if language == "yaml":
            name, _, text = body.partition("\n")
            (tmp_path / name.removeprefix("# ")).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name.removeprefix("# ")).write_text(text + "\n")
    monkeypatch.chdir(tmp_path)
    run_console(cli, blocks[1][1], steps=3)


def test_a_workflow_from_its_own_json_file_is_created_then_left_alone_and_a_step_change_is_a_diff(cli, tmp_path):
    trip = json.loads((Path(__file__).resolve().parents[2] / "examples" / "workflows" / "book-trip.json").read_text())
    (tmp_path / "trip.json").write_text(json.dumps({"kind": "workflow", **trip}))
    assert cli("apply", "-f", str(tmp_path), "--source", "travel", output=None).exit_code == 0
    (workflow,) = cli.json("workflows", "list")["items"]
    assert workflow["tags"] == {"managed_by": "travel"}
    assert cli("plan", "-f", str(tmp_path), "--source", "travel", output=None).exit_code == 0

    trip["steps"][2]["payload"]["amount"] = 500
    (tmp_path / "trip.json").write_text(json.dumps({"kind": "workflow", **trip}))
    planned = cli("plan", "-f", str(tmp_path), "--source", "travel", output=None)
    assert (planned.exit_code, planned.stdout.splitlines()[1].split(":")[0]) == (2, "    steps")
    assert cli("apply", "-f", str(tmp_path), "--source", "travel", output=None).exit_code == 0
    changed = cli.json("workflows", "get", workflow["id"])
    assert (changed["steps"][2]["payload"]["amount"], changed["version"]) == (500, workflow["version"] + 1)


def test_the_example_definition_files_in_docs_apply_as_they_are_and_again_change_nothing(cli):
    """docs/examples/jobs-as-code: the files the schema test checks against the JSON Schema, accepted by the API."""
    examples = Path(__file__).resolve().parents[2] / "docs" / "examples" / "jobs-as-code"
    applied = cli("apply", "-f", str(examples), "--source", "examples", output=None)
    assert applied.exit_code == 0, applied.output
    assert {c["name"] for c in cli.json("calendars", "list")["items"]} == {"company-holidays", "business-hours"}
    assert set(_jobs(cli)) == {"nightly-export", "partner-health"}
    assert [w["name"] for w in cli.json("workflows", "list")["items"]] == ["book-trip"]
    (freeze,) = cli.json("freezes", "list")["items"]
    assert freeze["reason"].endswith(" [managed_by: examples, name: year-end]")
    assert cli("plan", "-f", str(examples), "--source", "examples", output=None).exit_code == 0


CLIENT_MARKER = "<!-- python client example: run in process by tests/cli/test_jobs_as_code_cli.py -->"


def test_the_pages_python_client_example_prints_what_the_page_shows(cli):
    """docs/jobs-as-code.md's Python client example, run against the API handler: it prints what the page says."""
    blocks = marked_blocks(CLIENT_MARKER)
    assert [language for language, _ in blocks] == ["python", "text"]
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(compile(blocks[0][1], str(DOCS), "exec"), {"__name__": "docs_example"})
    assert printed.getvalue().splitlines() == blocks[1][1].splitlines()
