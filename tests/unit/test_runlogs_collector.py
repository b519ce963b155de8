"""The run log collector (tickwork.jobtypes.run_log) and its reader's Insights link (tickwork.control.
run_log_reader): levels, caps, the truncation marker, ctx.log, the Insights link; and the attempt history's rules
(numbering open records, marking lost attempts, merging deferrals, the bound)."""

from __future__ import annotations

import json
import logging
import threading
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote

import pytest
from tickwork.control.run_log_reader import InsightsLink, insights_link_of
from tickwork.executor.outcomes import LOST_ATTEMPT, attempt_record, history_after
from tickwork.jobtypes import RunContext
from tickwork.jobtypes.run_log import LIMIT_BYTES, LIMIT_LINES, RunLog
from tickwork.model.clock import FakeClock
from tickwork.model.run import MAX_ATTEMPT_HISTORY, RUN_HISTORY_MAX_BYTES, AttemptRecord, Run, RunError
from tickwork.model.states import AttemptOutcome, RunStatus
from tickwork.settings import ApiSettings
from tickwork.store.codec import run_to_attrs

T0 = datetime(2026, 11, 23, 8, 0, 0, tzinfo=UTC)
RUN_ID = "j" + "0" * 25 + ".1795420800000"


def _log(**limits: int) -> RunLog:
    return RunLog(RUN_ID, 2, FakeClock(T0), **limits)


def test_lines_keep_their_time_level_message_and_fields_in_order():
    log = _log()
    log.log("fetched", rows=3)
    log.clock.sleep(1.25)  # type: ignore[attr-defined]
    log.log("slow page", "warning", page=2, at=T0)
    log.error("gave up")
    document = log.document()
    assert document["lines"] == [
        {"at": "2026-11-23T08:00:00.000Z", "level": "INFO", "message": "fetched", "fields": {"rows": 3}},
        {
            "at": "2026-11-23T08:00:01.250Z",
            "level": "WARNING",
            "message": "slow page",
            "fields": {"page": 2, "at": "2026-11-23 08:00:00+00:00"},  # not JSON: kept as its text
        },
        {"at": "2026-11-23T08:00:01.250Z", "level": "ERROR", "message": "gave up", "fields": {}},
    ]
    assert (document["run_id"], document["attempt"], document["truncated"]) == (RUN_ID, 2, False)
    assert (document["limit_bytes"], document["limit_lines"]) == (LIMIT_BYTES, LIMIT_LINES) == (65536, 1000)


@pytest.mark.parametrize("level", ["TRACE", "warn", "", 3])
def test_an_unknown_level_is_refused_and_nothing_is_kept(level):
    log = _log()
    with pytest.raises(ValueError, match="log level must be one of DEBUG, INFO, WARNING, ERROR"):
        log.log("x", level)  # type: ignore[arg-type]
    assert log.empty


def test_each_level_has_its_method_and_reaches_the_functions_log_with_the_run_id(caplog):
    log = _log()
    caplog.set_level(logging.DEBUG, logger="tickwork")
    log.debug("d", k=1)
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [line["level"] for line in log.document()["lines"]] == ["DEBUG", "INFO", "WARNING", "ERROR"]
    records = [r for r in caplog.records if r.getMessage() in ("d", "i", "w", "e")]
    assert [r.levelname for r in records] == ["DEBUG", "INFO", "WARNING", "ERROR"]
    assert {(r.run_id, r.attempt) for r in records} == {(RUN_ID, 2)}  # type: ignore[attr-defined]
    assert records[0].fields == {"k": 1}  # type: ignore[attr-defined]


def test_the_line_cap_truncates_and_marks_it():
    log = _log(limit_lines=3)
    for i in range(5):
        log.log(f"line {i}")
    document = log.document()
    assert document["truncated"] is True
    *kept, marker = document["lines"]
    assert [line["message"] for line in kept] == ["line 0", "line 1", "line 2"]
    assert marker["level"] == "WARNING"
    assert marker["fields"] == {"truncated": True, "dropped_lines": 2}
    assert "2 later line(s)" in marker["message"]


def test_the_byte_cap_truncates_and_no_line_after_the_first_dropped_is_kept():
    log = _log(limit_bytes=200)
    log.log("a" * 50)
    log.log("b" * 200)  # over the cap: dropped
    log.log("c")  # would fit, but the log is cut where it was first too long: no holes
    document = log.document()
    kept = [line["message"] for line in document["lines"][:-1]]
    assert kept == ["a" * 50]
    assert sum(len(json.dumps(line, separators=(",", ":"))) for line in document["lines"][:-1]) <= 200
    assert document["lines"][-1]["fields"]["dropped_lines"] == 2


def test_a_log_under_its_caps_has_no_marker():
    log = _log(limit_lines=2)
    log.log("one")
    log.log("two")
    document = log.document()
    assert document["truncated"] is False
    assert [line["message"] for line in document["lines"]] == ["one", "two"]


def test_lines_logged_from_many_threads_are_all_kept_up_to_the_cap():
    log = _log(limit_lines=500)

    def write(n: int) -> None:
        for i in range(100):
            log.log(f"{n}-{i}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    document = log.document()
    assert len(document["lines"]) == 501  # 500 kept and the marker
    assert document["lines"][-1]["fields"]["dropped_lines"] == 300


def test_a_run_context_has_its_own_log_by_ctx_log_and_ctx_logger():
    clock = FakeClock(T0)
    ctx = RunContext(run_id=RUN_ID, job_id="j" + "0" * 25, tenant="t", attempt=1, deadline=T0, clock=clock)
    assert ctx.logger.empty
    ctx.log("via log", "error", n=1)
    ctx.logger.info("via logger")
    assert [(line["level"], line["message"]) for line in ctx.logger.document()["lines"]] == [
        ("ERROR", "via log"),
        ("INFO", "via logger"),
    ]
    assert ctx.logger.attempt == 1


def _run(**fields: object) -> Run:
    return Run.model_validate(
        {"id": RUN_ID, "job_id": "j" + "0" * 25, "tenant": "t", "scheduled_for": T0, "status": RunStatus.SUCCEEDED}
        | fields
    )


def test_the_insights_link_queries_the_run_id_over_the_log_groups_around_the_run():
    run = _run(enqueued_at=T0 - timedelta(minutes=1), finished_at=T0 + timedelta(minutes=2))
    url = InsightsLink("us-east-2", ("/aws/lambda/a", "/aws/lambda/b")).url(run, T0 + timedelta(hours=1))
    assert url.startswith("https://us-east-2.console.aws.amazon.com/cloudwatch/home?region=us-east-2#logsV2:")
    assert "%" not in url
    assert " " not in url
    detail = unquote(unquote(url.split("logs-insights", 1)[1].replace("$", "%")).replace("*", "%"))
    assert f"| filter run_id = '{RUN_ID}'" in detail
    assert "~start~'2026-11-23T07:54:00.000Z" in detail  # 5 minutes before it was queued
    assert "(end~'2026-11-23T08:07:00.000Z" in detail  # 5 minutes after it finished
    assert "~source~(~'/aws/lambda/a~'/aws/lambda/b)" in detail


def test_the_insights_link_is_deployed_only():
    deployed = {
        "AWS_LAMBDA_FUNCTION_NAME": "x-api",
        "EXECUTOR_LOG_GROUPS": "/aws/lambda/x-executor",
        "AWS_REGION": "eu-west-1",
    }
    link = insights_link_of(ApiSettings.from_env(deployed))
    assert link == InsightsLink("eu-west-1", ("/aws/lambda/x-executor",))
    assert insights_link_of(ApiSettings.from_env(deployed | {"EXECUTOR_LOG_GROUPS": ""})) is None
    for name in deployed:  # locally there is no function name (whatever the auth mode); each is needed
        assert insights_link_of(ApiSettings.from_env({k: v for k, v in deployed.items() if k != name})) is None


def _record(attempt: int, outcome: AttemptOutcome | None, minute: int, *, ended: bool = True) -> AttemptRecord:
    at = T0 + timedelta(minutes=minute)
    return AttemptRecord(attempt=attempt, started_at=at, ended_at=at if ended else None, outcome=outcome)


def test_open_records_are_numbered_back_from_the_runs_attempts():
    run = _run(
        status=RunStatus.RUNNING,
        attempts=3,
        attempt_history=[
            {
                "attempt": 1,
                "started_at": "2026-11-23T08:00:00Z",
                "ended_at": "2026-11-23T08:00:01Z",
                "outcome": "retrying",
            },
            {"started_at": "2026-11-23T08:01:00Z"},  # its executor died
            {"started_at": "2026-11-23T08:03:00Z"},  # running now
        ],
    )
    assert [(a.attempt, a.outcome, a.ended_at) for a in run.attempt_history] == [
        (1, AttemptOutcome.RETRYING, T0 + timedelta(seconds=1)),
        (2, None, None),
        (3, None, None),
    ]


def test_the_history_after_an_outcome_marks_lost_attempts_merges_deferrals_and_keeps_the_last_20():
    lost = _record(1, None, 0, ended=False)
    run = _run(attempts=2, attempt_history=[lost])
    done = _record(2, AttemptOutcome.SUCCEEDED, 5)
    assert history_after(run, done).records == [lost.model_copy(update={"error": LOST_ATTEMPT}), done]
    assert history_after(run, None).records == [lost.model_copy(update={"error": LOST_ATTEMPT})]  # skipped

    deferred = _record(1, AttemptOutcome.DEFERRED, 0)
    again = _record(1, AttemptOutcome.DEFERRED, 7)
    merged = history_after(_run(attempts=1, attempt_history=[deferred]), again)
    assert merged.records == [deferred.model_copy(update={"ended_at": again.ended_at})]
    other = _record(2, AttemptOutcome.DEFERRED, 9)  # another attempt's deferral: a record of its own
    assert len(history_after(_run(attempts=2, attempt_history=[deferred]), other).records) == 2

    many = [_record(n, AttemptOutcome.RETRYING, n) for n in range(1, MAX_ATTEMPT_HISTORY + 1)]
    last = _record(MAX_ATTEMPT_HISTORY + 1, AttemptOutcome.FAILED, 99)
    kept = history_after(_run(attempts=len(many) + 1, attempt_history=many), last)
    assert len(kept.records) == MAX_ATTEMPT_HISTORY == 20
    assert [a.attempt for a in kept.records] == list(range(2, MAX_ATTEMPT_HISTORY + 2))
    assert kept.earlier is not None
    assert (kept.earlier.records, kept.earlier.first_attempt, kept.earlier.outcomes) == (1, 1, {"retrying": 1})


def test_a_run_of_500_segments_keeps_each_in_its_history_within_its_stated_bound():
    """Every record folded past the last 20 still counts (records, outcomes, handler time), and the history's
    share of the run item stays under RUN_HISTORY_MAX_BYTES, each record with an error of the longest kept."""
    run = _run(status=RunStatus.RUNNING, attempts=1)
    error = RunError(type="Boom", message="x" * 2000)
    for minute in range(500):
        record = attempt_record(
            run,
            T0 + timedelta(minutes=minute),
            T0 + timedelta(minutes=minute, seconds=40),
            AttemptOutcome.YIELDED,
            error,
        )
        history = history_after(run, record)
        run = run.model_copy(update={"attempt_history": history.records, "earlier_attempts": history.earlier})
    assert len(history.records) == MAX_ATTEMPT_HISTORY
    assert history.earlier is not None
    assert history.earlier.records + len(history.records) == 500
    assert history.earlier.outcomes == {"yielded": 480}
    assert history.handler_ms == 500 * 40_000
    assert history.earlier.first_started_at == T0  # the first start stays, folded
    attrs = run_to_attrs(run)
    kept = json.dumps({k: attrs[k] for k in ("attempt_history", "earlier_attempts")})
    assert len(kept.encode()) < RUN_HISTORY_MAX_BYTES
    assert len(json.dumps(attrs, default=str).encode()) < 400_000


def test_an_attempt_that_timed_out_is_recorded_timed_out():
    run = _run(attempts=1)
    timeout = RunError(type="RunTimeout", message="run exceeded its timeout")
    record = attempt_record(run, T0, T0 + timedelta(seconds=30), AttemptOutcome.RETRYING, timeout)
    assert record is not None
    assert (record.outcome, record.error) == (AttemptOutcome.TIMED_OUT, "RunTimeout: run exceeded its timeout")
    assert attempt_record(run, None, T0, AttemptOutcome.FAILED) is None
    long = RunError(type="E", message="x" * 2000)
    assert len(attempt_record(run, T0, T0, AttemptOutcome.FAILED, long).error or "") == 500  # type: ignore[union-attr]
