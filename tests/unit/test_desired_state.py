"""The pure part of `tickwork plan` and `tickwork apply` (tickwork_cli.desired_state): definitions against what the
API has, to a plan, with no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from tickwork_cli.desired_state import Definition, DefinitionError, differences_of, plan, with_calendar_ids


def _job(name: str, **body: Any) -> Definition:
    return Definition("job", name, {"name": name, "type": "echo", **body}, f"jobs.yaml:{len(name)}")


def _live_job(name: str, id_: str, source: str = "data", **fields: Any) -> dict[str, Any]:
    return {
        "id": id_,
        "name": name,
        "type": "echo",
        "state": "ACTIVE",
        "schedule": {"rate": "1 hour", "timezone": "UTC", "start_at": None},
        "priority": 5,
        "calendars": [],
        "tags": {"managed_by": source},
        **fields,
    }


def test_an_object_is_compared_by_the_fields_the_file_gives_instants_as_instants():
    desired = {"schedule": {"rate": "1 hour", "start_at": "2026-12-01T09:00:00Z"}, "retry": {"max_attempts": 3}}
    live = {
        "schedule": {"rate": "1 hour", "start_at": "2026-12-01T09:00:00.000+00:00", "timezone": "UTC"},
        "retry": {"max_attempts": 3, "backoff_seconds": 30},
        "priority": 9,
    }
    assert differences_of(desired, live) == []
    changed = differences_of({**desired, "retry": {"max_attempts": 4}}, live)
    assert [(d.path, d.live, d.desired) for d in changed] == [("retry.max_attempts", 3, 4)]


def test_tags_and_lists_are_compared_whole():
    assert [d.path for d in differences_of({"tags": {"a": "1"}}, {"tags": {"a": "1", "b": "2"}})] == ["tags"]
    assert [d.path for d in differences_of({"steps": [{"id": "x"}]}, {"steps": [{"id": "x"}, {"id": "y"}]})] == [
        "steps"
    ]
    assert differences_of({"flag": True}, {"flag": 1}) != []


def test_calendars_come_first_and_cancels_last_and_a_change_sends_only_its_fields():
    calendar = Definition("calendar", "holidays", {"name": "holidays", "windows": []}, "c.yaml:1")
    definitions = [
        _job("new-one", schedule={"rate": "1 hour"}, calendars=["holidays"]),
        _job("kept", schedule={"rate": "2 hours"}),
        calendar,
    ]
    live = {"job": [_live_job("kept", "j1"), _live_job("gone", "j2")], "calendar": [], "workflow": []}
    made = plan(definitions, live, "data", prune=True)
    assert [(a.kind, a.object_kind, a.name) for a in made.actions] == [
        ("create", "calendar", "holidays"),
        ("create", "job", "new-one"),
        ("change", "job", "kept"),
        ("cancel", "job", "gone"),
    ]
    change = made.actions[2]
    assert change.body == {"schedule": {"rate": "2 hours"}}
    assert made.actions[1].body["tags"] == {"managed_by": "data"}
    assert with_calendar_ids(made.actions[1].body, {"holidays": "c" + "0" * 25})["calendars"] == ["c" + "0" * 25]
    assert [a.kind for a in plan(definitions, live, "data").actions] == ["create", "create", "change"]  # no prune


def test_a_live_jobs_calendars_are_compared_by_name():
    live = {
        "job": [_live_job("kept", "j1", calendars=["c1"])],
        "calendar": [{"id": "c1", "name": "holidays", "windows": []}],
    }
    definitions = [
        _job("kept", schedule={"rate": "1 hour"}, calendars=["holidays"]),
        Definition("calendar", "holidays", {"name": "holidays", "windows": []}, "c.yaml:1"),
    ]
    assert plan(definitions, live, "data").actions == ()


def test_a_name_defined_twice_or_an_unknown_calendar_is_an_error_naming_where():
    with pytest.raises(DefinitionError, match=r"jobs.yaml:1: job 'a' is defined twice \(also at jobs.yaml:1\)"):
        plan([_job("a"), _job("a")], {}, "data")
    unknown = Definition("job", "b", {"name": "b", "calendars": ["nope"]}, "j.yaml:3", {"calendars": "j.yaml:7"})
    with pytest.raises(DefinitionError, match=r"^j.yaml:7: calendars: no calendar named 'nope'"):
        plan([unknown], {}, "data")


def test_an_api_field_path_is_found_at_its_line_or_its_closest_parents():
    definition = Definition("job", "a", {}, "f.yaml:1", {"schedule": "f.yaml:4", "schedule.cron": "f.yaml:5"})
    assert definition.where_is("schedule.cron") == "f.yaml:5"
    assert definition.where_is("schedule.timezone") == "f.yaml:4"
    assert definition.where_is("payload.x") == "f.yaml:1"
