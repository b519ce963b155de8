"""Schedules beside their handlers: what `@job_type(schedule=..., jobs=[...])` declares (kept as data in the
registry, tickwork.jobtypes.registry) read as the job definitions of `tickwork apply --from-module`
(tickwork_cli.declared_jobs), checked with the API's JobSpec and named with the module and the type."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from tickwork.jobtypes import JobType
from tickwork.jobtypes.registry import declared_jobs
from tickwork_cli.declared_jobs import definitions_of
from tickwork_cli.desired_state import DefinitionError


class Empty(BaseModel):
    pass


def _handler(payload: Any, ctx: Any) -> None:
    return None


def _type(name: str, *, schedule: dict[str, Any] | None = None, jobs: list[dict[str, Any]] | tuple = ()) -> JobType:
    return JobType(name, Empty, _handler, declared_jobs=declared_jobs(name, schedule, jobs))


def test_a_schedule_is_one_job_of_the_types_name_and_type() -> None:
    (definition,) = definitions_of("acme_jobs", [_type("report", schedule={"cron": "0 3 * * *"})])
    assert (definition.kind, definition.name) == ("job", "report")
    assert definition.body == {"name": "report", "schedule": {"cron": "0 3 * * *"}, "type": "report"}
    assert definition.where == f"{__name__}: @job_type('report')"


def test_several_jobs_each_with_its_own_name_and_fields() -> None:
    jobs = [
        {"name": "report-eu", "schedule": {"cron": "0 3 * * *", "timezone": "Europe/Paris"}, "payload": {"r": "eu"}},
        {"name": "report-us", "schedule": {"rate": "1 hour"}, "retry": {"max_attempts": 5}, "tags": {"team": "a"}},
    ]
    definitions = definitions_of("acme_jobs", [_type("report", jobs=jobs)])
    assert [(d.name, d.body["type"], d.where.endswith(f"jobs[{i}]")) for i, d in enumerate(definitions)] == [
        ("report-eu", "report", True),
        ("report-us", "report", True),
    ]
    assert definitions[1].body["retry"] == {"max_attempts": 5}


def test_a_type_that_declares_nothing_gives_no_definition() -> None:
    assert definitions_of("acme_jobs", [_type("plain")]) == []


def test_a_bad_declaration_is_refused_with_the_module_the_type_and_the_field() -> None:
    with pytest.raises(DefinitionError) as refused:
        definitions_of("acme_jobs", [_type("report", jobs=[{"schedule": {"cron": "0 3 * * *"}, "priority": 42}])])
    assert refused.value.where == f"{__name__}: @job_type('report')"
    assert "priority: Input should be less than or equal to 9" in str(refused.value)


def test_an_unknown_field_is_refused_as_the_api_refuses_it() -> None:
    with pytest.raises(DefinitionError, match=r"@job_type\('report'\): schedul: Extra inputs are not permitted"):
        definitions_of("acme_jobs", [_type("report", jobs=[{"schedule": {"rate": "1 hour"}, "schedul": {}}])])


def test_calendars_are_named_by_name_and_left_to_the_plan() -> None:
    jobs = [{"schedule": {"cron": "0 3 * * *"}, "calendars": ["company-holidays"]}]
    (definition,) = definitions_of("acme_jobs", [_type("report", jobs=jobs)])
    assert definition.body["calendars"] == ["company-holidays"]


@pytest.mark.parametrize(
    ("schedule", "jobs", "message"),
    [
        ({"cron": "0 3 * * *"}, [{"schedule": {"rate": "1 hour"}}], "not both"),
        (None, ["0 3 * * *"], "a job's fields"),
        (None, [{"type": "echo", "schedule": {"rate": "1 hour"}}], "give no `type`"),
    ],
)
def test_the_decorator_refuses_a_declaration_of_the_wrong_shape_when_the_module_is_imported(
    schedule: Any, jobs: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        declared_jobs("report", schedule, jobs)


def test_the_declaration_is_a_copy_the_module_cannot_change_after() -> None:
    schedule = {"cron": "0 3 * * *"}
    job_type = _type("report", schedule=schedule)
    schedule["cron"] = "0 4 * * *"
    assert job_type.declared_jobs == ({"schedule": {"cron": "0 3 * * *"}},)
