"""The pure part of `tickwork plan` and `tickwork apply` (tickwork_cli.desired_state): definitions against what the
API has, to a plan, with no I/O."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from tickwork_cli.desired_state import (
    Definition,
    DefinitionError,
    differences_of,
    freeze_reason,
    plan,
    with_calendar_ids,
)

NOW = datetime(2026, 11, 21, 14, 0, tzinfo=UTC)


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
    made = plan(definitions, live, "data", now=NOW, prune=True)
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
    assert [a.kind for a in plan(definitions, live, "data", now=NOW).actions] == [
        "create",
        "create",
        "change",
    ]  # no prune


def test_a_live_jobs_calendars_are_compared_by_name():
    live = {
        "job": [_live_job("kept", "j1", calendars=["c1"])],
        "calendar": [{"id": "c1", "name": "holidays", "windows": []}],
    }
    definitions = [
        _job("kept", schedule={"rate": "1 hour"}, calendars=["holidays"]),
        Definition("calendar", "holidays", {"name": "holidays", "windows": []}, "c.yaml:1"),
    ]
    assert plan(definitions, live, "data", now=NOW).actions == ()


def test_a_name_defined_twice_or_an_unknown_calendar_is_an_error_naming_where():
    with pytest.raises(DefinitionError, match=r"jobs.yaml:1: job 'a' is defined twice \(also at jobs.yaml:1\)"):
        plan([_job("a"), _job("a")], {}, "data", now=NOW)
    unknown = Definition("job", "b", {"name": "b", "calendars": ["nope"]}, "j.yaml:3", {"calendars": "j.yaml:7"})
    with pytest.raises(DefinitionError, match=r"^j.yaml:7: calendars: no calendar named 'nope'"):
        plan([unknown], {}, "data", now=NOW)


def test_an_api_field_path_is_found_at_its_line_or_its_closest_parents():
    definition = Definition("job", "a", {}, "f.yaml:1", {"schedule": "f.yaml:4", "schedule.cron": "f.yaml:5"})
    assert definition.where_is("schedule.cron") == "f.yaml:5"
    assert definition.where_is("schedule.timezone") == "f.yaml:4"
    assert definition.where_is("payload.x") == "f.yaml:1"


def _hand_made(name: str, id_: str, **fields: Any) -> dict[str, Any]:
    return {**_live_job(name, id_, **fields), "tags": fields.get("tags", {"team": "data"})}


def test_a_name_a_hand_made_job_has_is_a_conflict_and_never_a_second_job():
    live = {"job": [_hand_made("nightly", "j9")], "calendar": [], "workflow": []}
    made = plan([_job("nightly", schedule={"rate": "1 hour"})], live, "data", now=NOW)
    assert made.actions == ()
    (conflict,) = made.conflicts
    assert (conflict.object_kind, conflict.name, conflict.ids, conflict.owner) == ("job", "nightly", ("j9",), None)
    assert "made by hand: --adopt makes it this source's" in conflict.reason


def test_adopt_takes_over_the_one_hand_made_job_of_the_name_tagging_it_and_sending_the_fields_that_differ():
    live = {"job": [_hand_made("nightly", "j9", priority=2)], "calendar": [], "workflow": []}
    made = plan([_job("nightly", schedule={"rate": "1 hour"}, priority=7)], live, "data", now=NOW, adopt=True)
    assert made.conflicts == ()
    (adoption,) = made.actions
    assert (adoption.kind, adoption.live_id) == ("adopt", "j9")
    assert adoption.body == {"priority": 7, "tags": {"managed_by": "data"}}
    assert [d.path for d in adoption.differences] == ["priority", "tags"]


def test_another_sources_object_or_several_hand_made_ones_of_the_name_are_conflicts_even_with_adopt():
    live = {
        "job": [_live_job("report", "j1", source="ops"), _hand_made("report", "j2"), _hand_made("sync", "j3")],
        "workflow": [_hand_made("sync", "w1"), _hand_made("sync", "w2")],
        "calendar": [],
    }
    definitions = [_job("report"), _job("sync"), Definition("workflow", "sync", {"name": "sync"}, "w.yaml:1")]
    made = plan(definitions, live, "data", now=NOW, adopt=True)
    assert [(c.object_kind, c.name, c.ids, c.owner) for c in made.conflicts] == [
        ("job", "report", ("j1",), "ops"),
        ("workflow", "sync", ("w1", "w2"), None),
    ]
    assert [(a.kind, a.name, a.live_id) for a in made.actions] == [("adopt", "sync", "j3")]
    assert "managed by source 'ops': rename one" in made.conflicts[0].reason
    assert "2 hand-made workflows'" in made.conflicts[1].reason


def test_a_name_this_source_manages_is_its_own_beside_a_hand_made_one_and_a_prune_leaves_others_alone():
    live = {
        "job": [_live_job("nightly", "j1"), _hand_made("nightly", "j2"), _hand_made("other", "j3")],
        "calendar": [],
        "workflow": [],
    }
    made = plan([_job("nightly", schedule={"rate": "1 hour"})], live, "data", now=NOW, prune=True)
    assert (made.actions, made.conflicts) == ((), ())


def _freeze(name: str, **body: Any) -> Definition:
    fields = {"selector": {"tags": {"team": "data"}}, "until": "2026-12-24T00:00:00Z", "reason": "release", **body}
    return Definition("freeze", name, {"name": name, **fields}, "f.yaml:1", {"for_seconds": "f.yaml:6"})


def _live_freeze(id_: str, reason: str, until: str = "2026-12-24T00:00:00.000Z", **fields: Any) -> dict[str, Any]:
    return {
        "id": id_,
        "tenant": "default",
        "selector": {"tags": {"team": "data"}, "job_ids": None, "all": None},
        "from": "2026-11-21T13:00:00.000Z",
        "until": until,
        "reason": reason,
        "on_blocked": "SKIP",
        "created_at": "2026-11-21T13:00:00.000Z",
        "lifted_at": None,
        **fields,
    }


def test_a_freeze_is_made_with_its_source_and_name_in_its_reason_and_then_matched_by_them():
    made = plan([_freeze("release")], {"freeze": []}, "data", now=NOW)
    (create,) = made.actions
    assert (create.kind, create.object_kind, create.name) == ("create", "freeze", "release")
    assert create.body == {
        "selector": {"tags": {"team": "data"}},
        "until": "2026-12-24T00:00:00Z",
        "reason": "release [managed_by: data, name: release]",
    }
    live = {"freeze": [_live_freeze("f1", freeze_reason("release", "data", "release"))]}
    assert plan([_freeze("release")], live, "data", now=NOW).actions == ()


def test_a_changed_freeze_is_replaced_and_its_selector_compared_whole():
    live = {"freeze": [_live_freeze("f1", freeze_reason("release", "data", "release"))]}
    made = plan([_freeze("release", until="2026-12-31T00:00:00Z")], live, "data", now=NOW)
    (replace,) = made.actions
    assert (replace.kind, replace.live_id, replace.body["until"]) == ("replace", "f1", "2026-12-31T00:00:00Z")
    assert [(d.path, d.live, d.desired) for d in replace.differences] == [
        ("until", "2026-12-24T00:00:00.000Z", "2026-12-31T00:00:00Z")
    ]
    wider = {"freeze": [_live_freeze("f1", freeze_reason("release", "data", "release"))]}
    wider["freeze"][0]["selector"]["tags"]["env"] = "prod"
    (replace,) = plan([_freeze("release")], wider, "data", now=NOW).actions
    assert [(d.path, d.live) for d in replace.differences] == [("selector", {"tags": {"team": "data", "env": "prod"}})]


def test_a_lifted_ended_hand_made_or_other_sources_freeze_is_not_the_files_and_a_prune_lifts_only_its_own():
    mine = freeze_reason("release", "data", "release")
    live = {
        "freeze": [
            _live_freeze("f1", mine, lifted_at="2026-11-21T13:30:00.000Z"),
            _live_freeze("f2", mine, until="2026-11-21T13:59:00.000Z"),  # ended before NOW
            _live_freeze("f3", "release"),  # made by hand
            _live_freeze("f4", freeze_reason("release", "ops", "release")),
            _live_freeze("f5", freeze_reason("old", "data", "old")),
        ]
    }
    made = plan([_freeze("release")], live, "data", now=NOW, prune=True)
    assert [(a.kind, a.name, a.live_id) for a in made.actions] == [("create", "release", None), ("cancel", "old", "f5")]
    assert [a.kind for a in plan([_freeze("release")], live, "data", now=NOW).actions] == ["create"]


def test_a_freeze_the_file_ends_in_the_past_is_lifted_if_it_stands_and_else_left_alone():
    live = {"freeze": [_live_freeze("f1", freeze_reason("release", "data", "release"))]}
    ended = _freeze("release", until="2026-11-21T12:00:00Z")
    assert [(a.kind, a.live_id) for a in plan([ended], live, "data", now=NOW).actions] == [("cancel", "f1")]
    assert plan([ended], {"freeze": []}, "data", now=NOW, prune=True).actions == ()


def test_a_freeze_in_a_file_ends_at_an_instant_not_after_a_number_of_seconds():
    counted = Definition(
        "freeze",
        "r",
        {"name": "r", "selector": {"all": True}, "reason": "x", "for_seconds": 60},
        "f.yaml:1",
        {"for_seconds": "f.yaml:6"},
    )
    with pytest.raises(DefinitionError, match=r"^f.yaml:6: for_seconds: a freeze in a file ends at an instant"):
        plan([counted], {}, "data", now=NOW)
    endless = Definition("freeze", "r", {"name": "r", "selector": {"all": True}, "reason": "x"}, "f.yaml:1")
    with pytest.raises(DefinitionError, match=r"^f.yaml:1: a freeze needs its `until`"):
        plan([endless], {}, "data", now=NOW)
