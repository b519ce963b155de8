"""`tickwork plan --from-module` and `tickwork apply --from-module` (docs/jobs-as-code.md, "Schedules beside their
handlers"), in process against the API handler: the jobs a module's `@job_type` declares made so, again changing
nothing, a schedule changed in the module a diff, a declaration removed pruned, a bad one named with its module and
type; and the page's example as written."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tickwork.jobtypes import registry

from tests.cli.docs_examples import marked_blocks, run_console

MODULE = """
from pydantic import BaseModel
from tickwork.jobtypes import RunContext, job_type


class Report(BaseModel):
    region: str = "eu"


@job_type("acme-report", Report, schedule={"cron": "0 3 * * *", "timezone": "Europe/Paris"})
def report(payload: Report, ctx: RunContext) -> dict:
    return {"region": payload.region}


@job_type(
    "acme-sync",
    Report,
    jobs=[
        {"name": "acme-sync-eu", "schedule": {"rate": "1 hour"}, "payload": {"region": "eu"}},
        {"name": "acme-sync-us", "schedule": {"rate": "1 hour"}, "retry": {"max_attempts": 5}, "tags": {"team": "us"}},
    ],
)
def sync(payload: Report, ctx: RunContext) -> dict:
    return {}
"""


@pytest.fixture
def declare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], None]]:
    """Writes a module of job types in the test's folder (the CLI's current folder) and forgets any earlier version
    of it: its types leave the registry, the module leaves sys.modules, so the next import is the new text. They,
    and sys.path, are as they were after the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the CLI puts its current folder first
    before = dict(registry._types)
    modules: set[str] = set()

    def write(module: str, text: str) -> None:
        (tmp_path / f"{module}.py").write_text(text)
        # Without any type of a module of that name: another test of this process may have imported one (the
        # worked example's acme_jobs, tests/unit/test_job_type_modules.py) and left its types registered.
        kept = {
            n: t for n, t in before.items() if (getattr(t.handler, "__module__", "") or "").partition(".")[0] != module
        }
        monkeypatch.setattr(registry, "_types", kept)
        sys.modules.pop(module, None)
        modules.add(module)

    yield write
    for module in modules:
        sys.modules.pop(module, None)


def _jobs(cli: Any) -> dict[str, dict[str, Any]]:
    return {j["name"]: j for j in cli.json("jobs", "list", "--all")["items"] if j["state"] != "CANCELLED"}


def _run(cli: Any, *args: str) -> Any:
    return cli(*args, "--from-module", "acme_jobs", "--source", "acme", output=None)


def test_the_declared_jobs_are_created_then_again_change_nothing(cli, declare):
    declare("acme_jobs", MODULE)
    planned = _run(cli, "plan")
    created = ["+ job acme-report", "+ job acme-sync-eu", "+ job acme-sync-us"]
    assert (planned.exit_code, planned.stdout.splitlines()) == (
        2,
        [*created, "Plan: 3 to create, 0 to change, 0 to cancel."],
    )
    assert _run(cli, "apply").exit_code == 0
    jobs = _jobs(cli)
    report = jobs["acme-report"]
    assert (report["type"], report["schedule"]["cron"], report["schedule"]["timezone"]) == (
        "acme-report",
        "0 3 * * *",
        "Europe/Paris",
    )
    assert report["tags"] == {"managed_by": "acme"}
    assert (jobs["acme-sync-us"]["type"], jobs["acme-sync-us"]["retry"]["max_attempts"]) == ("acme-sync", 5)
    assert jobs["acme-sync-us"]["tags"] == {"team": "us", "managed_by": "acme"}
    assert jobs["acme-sync-eu"]["payload"] == {"region": "eu"}

    again = _run(cli, "apply")
    assert again.stdout.splitlines() == ["No changes: the API matches the files."]
    assert {n: j["version"] for n, j in _jobs(cli).items()} == {n: j["version"] for n, j in jobs.items()}
    assert _run(cli, "plan").exit_code == 0


def test_a_schedule_changed_in_the_module_is_a_diff_and_a_removed_declaration_is_pruned(cli, declare):
    declare("acme_jobs", MODULE)
    assert _run(cli, "apply").exit_code == 0
    before = _jobs(cli)

    declare("acme_jobs", MODULE.replace('"cron": "0 3 * * *"', '"cron": "30 4 * * *"'))
    planned = _run(cli, "plan")
    assert planned.exit_code == 2
    assert planned.stdout.splitlines() == [
        f"~ job acme-report ({before['acme-report']['id']})",
        '    schedule.cron: "0 3 * * *" -> "30 4 * * *"',
        "Plan: 0 to create, 1 to change, 0 to cancel.",
    ]
    assert _run(cli, "apply").exit_code == 0
    assert _jobs(cli)["acme-report"]["schedule"]["cron"] == "30 4 * * *"

    without_us = re.sub(r"\n        \{\"name\": \"acme-sync-us\".*\n", "\n", MODULE)
    assert without_us != MODULE
    declare("acme_jobs", without_us)
    assert _run(cli, "apply").exit_code == 0  # without --prune, left as it is
    assert "acme-sync-us" in _jobs(cli)
    pruned = _run(cli, "apply", "--prune")
    assert pruned.exit_code == 0, pruned.output
    assert f"- job acme-sync-us ({before['acme-sync-us']['id']}): cancel" in pruned.stdout.splitlines()
    assert set(_jobs(cli)) == {"acme-report", "acme-sync-eu"}


def test_modules_and_files_together_and_a_name_in_both_is_defined_twice(cli, declare, tmp_path):
    declare("acme_jobs", MODULE)
    (tmp_path / "jobs.yaml").write_text('kind: job\nname: nightly\ntype: echo\nschedule: {cron: "0 1 * * *"}\n')
    planned = _run(cli, "plan", "-f", "jobs.yaml")
    assert planned.stdout.splitlines()[-1] == "Plan: 4 to create, 0 to change, 0 to cancel."

    (tmp_path / "jobs.yaml").write_text('kind: job\nname: acme-report\ntype: echo\nschedule: {rate: "1 hour"}\n')
    twice = _run(cli, "plan", "-f", "jobs.yaml")
    assert twice.exit_code == 1
    assert "acme_jobs: @job_type('acme-report'): job 'acme-report' is defined twice (also at jobs.yaml:1)" in (
        twice.stderr
    )


def test_two_modules_at_once_each_gives_its_declared_jobs(cli, declare):
    declare("acme_jobs", MODULE)
    other = "from pydantic import BaseModel\nfrom tickwork.jobtypes import job_type\n\n\nclass P(BaseModel):\n    pass\n\n\n"
    declare(
        "beta_jobs",
        other + '@job_type("beta-ping", P, schedule={"rate": "5 minutes"})\ndef ping(p, ctx):\n    return {}\n',
    )
    both = _run(cli, "apply", "--from-module", "beta_jobs")
    assert both.exit_code == 0, both.output
    assert set(_jobs(cli)) == {"acme-report", "acme-sync-eu", "acme-sync-us", "beta-ping"}
    assert _jobs(cli)["beta-ping"]["schedule"]["rate"] == "5 minutes"


def test_a_bad_declaration_is_refused_named_with_its_module_and_type_and_nothing_is_sent(cli, declare):
    declare("acme_jobs", MODULE.replace('"timezone": "Europe/Paris"', '"timezone": "Europe/Paris", "priority": 1'))
    refused = _run(cli, "apply")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("tickwork: acme_jobs: @job_type('acme-report'): schedule.priority: Extra inputs")
    assert _jobs(cli) == {}


def test_a_declared_job_the_api_refuses_is_named_with_its_module_type_and_field(cli, declare):
    """The payload is the type's to check, on the server: its 422 names the declaration."""
    declare("acme_jobs", MODULE.replace('"payload": {"region": "eu"}', '"payload": {"region": 5}'))
    refused = _run(cli, "apply")
    assert refused.exit_code == 1
    assert refused.stderr.splitlines()[:2] == [
        "tickwork: acme_jobs: @job_type('acme-sync') jobs[0]: job 'acme-sync-eu' refused (422):",
        "  acme_jobs: @job_type('acme-sync') jobs[0]: payload.region: Input should be a valid string",
    ]
    assert "created job acme-report" in refused.stdout  # what came before it stays applied


def test_a_declared_job_of_a_type_the_stack_does_not_load_is_the_apis_422(cli, declare, monkeypatch, tmp_path):
    """The CLI's process has the module; the stack's registry (here: the API handler's) does not have its types."""
    import importlib

    from tickwork.jobtypes.registry import JobTypeRegistry
    from tickwork_cli import declared_jobs

    declare("acme_jobs", MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("acme_jobs")
    known_here = JobTypeRegistry()
    for name in registry.names():
        known_here.register(registry.get(name))
    monkeypatch.setattr(declared_jobs, "registry", known_here)
    for name in ("acme-report", "acme-sync"):
        registry._types.pop(name)

    refused = _run(cli, "apply")
    assert refused.exit_code == 1
    assert refused.stderr.splitlines()[:2] == [
        "tickwork: acme_jobs: @job_type('acme-report'): job 'acme-report' refused (422):",
        "  acme_jobs: @job_type('acme-report'): type: unknown job type 'acme-report'; known: "
        + ", ".join(registry.names()),
    ]
    assert _jobs(cli) == {}


def test_a_module_that_does_not_import_or_registers_no_type_is_an_error(cli, declare):
    declare("acme_jobs", "import no_such_module\n")
    broken = _run(cli, "plan")
    assert (broken.exit_code, broken.stderr.split(": ")[:2]) == (1, ["tickwork", "acme_jobs"])
    assert "No module named 'no_such_module'" in broken.stderr
    declare("acme_jobs", "X = 1\n")
    empty = _run(cli, "plan")
    assert (empty.exit_code, empty.stderr) == (
        1,
        "tickwork: acme_jobs: registers no job type (@job_type): nothing to read\n",
    )


def test_neither_files_nor_modules_is_an_error(cli):
    result = cli("plan", "--source", "acme", output=None)
    assert result.exit_code == 1
    assert "give the definitions: -f PATH, --from-module MODULE, or both" in result.stderr


MARKER = "<!-- schedules beside handlers example: run in process by tests/cli/test_schedules_beside_handlers_cli.py -->"


def test_the_pages_example_runs_as_written(cli, declare):
    """The page's module (named by its first line's comment), then its commands, each printing what it shows."""
    blocks = marked_blocks(MARKER)
    assert [language for language, _ in blocks] == ["python", "console"]
    name, _, text = blocks[0][1].partition("\n")
    declare(name.removeprefix("# ").removesuffix(".py"), text + "\n")
    run_console(cli, blocks[1][1], steps=3)
