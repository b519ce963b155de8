"""Settings and message models reject bad input with the offending name."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from tickwork.aws.queues import delay_for
from tickwork.control.api_bodies import JobSpec
from tickwork.model.errors import InvalidInput
from tickwork.model.ids import new_job_id, parse_run_id, run_id_for
from tickwork.model.messages import RunMessage
from tickwork.model.policies import Band
from tickwork.settings import Settings

BASE = {
    "TABLE_NAME": "t-table",
    "RESULTS_BUCKET": "bucket",
    **{f"QUEUE_URL_{b}": f"http://q/{b.lower()}" for b in ("HIGH", "NORMAL", "LOW")},
    **{f"DLQ_URL_{b}": f"http://q/{b.lower()}-dlq" for b in ("HIGH", "NORMAL", "LOW")},
}


def test_settings_parse_the_environment() -> None:
    s = Settings.from_env({**BASE, "DUE_SHARDS": "16", "HTTP_ALLOWLIST": "10.0.0.0/8, 127.0.0.1/32"})
    assert s.due_shards == 16
    assert s.http_allowlist == ("10.0.0.0/8", "127.0.0.1/32")
    assert s.queue_url(Band.LOW) == "http://q/low"
    assert s.band_of_queue_arn_or_url("arn:aws:sqs:us-east-1:1:normal") is Band.NORMAL


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"TABLE_NAME": None}, "TABLE_NAME"),
        ({"DUE_SHARDS": "0"}, "DUE_SHARDS"),
        ({"HORIZON_SECONDS": "30", "TICK_PERIOD_SECONDS": "60"}, "HORIZON_SECONDS"),
        ({"CLAIM_THREADS": "many"}, "CLAIM_THREADS"),
    ],
)
def test_bad_settings_name_the_variable(env: dict, name: str) -> None:
    merged = {**BASE, **env}
    merged = {k: v for k, v in merged.items() if v is not None}
    with pytest.raises(ValidationError) as info:
        Settings.from_env(merged)
    assert info.value.errors()[0]["loc"][0] == name


def test_run_ids_are_deterministic_and_parse_back() -> None:
    job_id = new_job_id(1_795_262_400_000)
    assert len(job_id) == 26
    assert job_id < new_job_id(1_795_262_400_001)  # time-ordered
    from tickwork.model.clock import from_ms

    at = from_ms(1_795_262_460_000)
    assert run_id_for(job_id, at) == run_id_for(job_id, at)
    assert parse_run_id(run_id_for(job_id, at)) is not None
    assert parse_run_id("../../etc/passwd") is None


def test_run_message_rejects_a_run_of_another_job() -> None:
    job_id = new_job_id()
    with pytest.raises(ValidationError):
        RunMessage(
            run_id=new_job_id() + ".1795262460000", job_id=job_id, tenant="t", scheduled_for="2026-11-21T12:01:00Z"
        )


@pytest.mark.parametrize(("seconds", "delay"), [(-5, 0), (0, 0), (0.001, 1), (59.2, 60), (10_000, 900)])
def test_delay_is_never_early_and_capped_by_sqs(seconds: float, delay: int) -> None:
    assert delay_for(seconds) == delay


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"priority": 10}, "priority"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"timeout_seconds": 841}, "timeout_seconds"),
        ({"retry": {"max_attempts": 101}}, "retry.max_attempts"),
        ({"retry": {"backoff_seconds": 10, "max_backoff_seconds": 5}}, "retry"),
        ({"schedule": {"cron": "* * * * *", "timezone": "Nowhere/Land"}}, "schedule.timezone"),
        ({"schedule": {"at": "2026-01-01T00:00:00Z", "rate": "1 hour"}}, "schedule"),
        ({"name": ""}, "name"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_job_spec_errors_name_the_field(spec: dict, field: str) -> None:
    body = {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, **spec}
    with pytest.raises(ValidationError) as info:
        JobSpec.model_validate(body)
    problem = InvalidInput.from_validation(info.value)
    assert problem.errors[0].field == field


def test_a_jobs_notify_names_job_events_only_once_each_and_defaults_to_failures():
    from tickwork.model.run_event_kinds import DEFAULT_NOTIFY, RunEventKind, emitted

    job = JobSpec.model_validate(
        {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "notify": ["Job Suspended", "Job Suspended"]}
    )
    assert job.notify == ["Job Suspended"]
    kinds = (RunEventKind.RUN_FAILED, RunEventKind.RUN_DEAD_LETTERED, RunEventKind.JOB_SUSPENDED)
    assert emitted(None, kinds) == [k.value for k in DEFAULT_NOTIFY]
    assert emitted(job.notify, kinds) == ["Job Suspended"]
    assert emitted([], kinds) == []
    with pytest.raises(ValidationError):
        JobSpec.model_validate(
            {"name": "n", "type": "echo", "schedule": {"rate": "1 hour"}, "notify": ["Freeze Ended"]}
        )


def test_a_notify_list_over_its_bound_is_refused_not_shortened_by_its_de_duplication():
    from pydantic import TypeAdapter, ValidationError
    from tickwork.model.run_event_kinds import JOB_EVENT_KINDS, Notify

    bound = 2 * len(JOB_EVENT_KINDS)  # 12: six kinds a job may name
    with pytest.raises(ValidationError, match=f"at most {bound} items"):
        TypeAdapter(Notify).validate_python(["Run Failed"] * (bound + 1))


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        ("tickwork.model.policies:Debounce", {"key": "k", "seconds": 5, "collect": 0}),
        (
            "tickwork.model.freezes:FreezeSpec",
            {"selector": {"all": True}, "for_seconds": 60, "reason": "r", "every_tenant": 1},
        ),
        ("tickwork.model.workflow.definition:WorkflowStep", {"id": "a", "type": "echo", "irreversible": 0}),
        ("tickwork.control.api_bodies:WorkflowRunCancel", {"compensate": 1}),
    ],
)
def test_a_number_is_not_taken_for_a_flag(model, fields):
    """The document says boolean: 0 or 1 is refused, as the schema refuses it, not read as false or true."""
    import importlib

    from pydantic import ValidationError

    module, name = model.split(":")
    with pytest.raises(ValidationError, match="valid boolean"):
        getattr(importlib.import_module(module), name).model_validate(fields)
