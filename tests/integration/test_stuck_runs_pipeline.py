"""Stuck runs through the real tick: a run nobody leases is counted in StuckRuns once it is QUEUED more than 5
minutes past its time, from the due entries the tick reads anyway; a run a gate keeps deferring, whose entry each
deferral moves past the tick's reads, is counted by the executor in StuckRunsHeldBack."""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

from tickwork.model.policies import Band
from tickwork.model.states import DeferReason, RunStatus
from tickwork.observability import logger
from tickwork.store import LimitRecords, semaphore_sort

from tests.harness import START, TENANT

FAR = timedelta(minutes=10)


def test_a_run_no_executor_takes_is_counted_stuck_after_five_minutes(pipeline):
    pipeline.create_job(schedule={"at": START + FAR}, payload={})
    pipeline.clock.advance(FAR.total_seconds())
    dispatcher = pipeline.services.dispatcher
    assert dispatcher.claim_due_runs().stuck == 0
    seen = []
    for _ in range(8):  # a tick a minute, no executor
        pipeline.clock.advance(60)
        seen.append(dispatcher.claim_due_runs().stuck)
    assert seen[:4] == [0, 0, 0, 0]  # re-sent, not yet stuck
    assert max(seen[4:]) == 1  # counted from 5 minutes past its time, whenever its entry comes due


def _held_back_counts(out: str) -> list[Any]:
    """The StuckRunsHeldBack EMF documents among printed lines: (their dimension sets, their values)."""
    emitted = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [
        (emf["_aws"]["CloudWatchMetrics"][0]["Dimensions"], emf["StuckRunsHeldBack"])
        for emf in emitted
        if "StuckRunsHeldBack" in emf
    ]


def test_a_run_a_concurrency_limit_keeps_deferring_past_five_minutes_is_counted_held_back_though_no_tick_sees_it(
    pipeline, monkeypatch, capsys, caplog
):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    job = pipeline.create_job(schedule={"at": START + FAR}, payload={}, concurrency={"key": "k", "limit": 1})
    pipeline.clock.advance(FAR.total_seconds())
    dispatcher = pipeline.services.dispatcher
    dispatcher.claim_due_runs()
    now = pipeline.clock.now()
    # The key's one slot is another run's, for longer than the test: this run is deferred each time it comes back.
    LimitRecords(pipeline.services.store.shared_table).acquire(
        TENANT, semaphore_sort("k"), holder="other", limit=1, until=now + FAR, now=now
    )
    caplog.set_level(logging.INFO, logger=logger.name)
    messages = pipeline.receive(Band.NORMAL)
    held_back, stuck = [], []
    for _ in range(8):  # its message back each minute (its wait is at most 60 s), a tick each minute
        capsys.readouterr()
        pipeline.deliver(Band.NORMAL, messages)
        messages = list(pipeline._last_failed)
        held_back.append(_held_back_counts(capsys.readouterr().out))
        pipeline.clock.advance(60)
        stuck.append(dispatcher.claim_due_runs().stuck)
    (run,) = pipeline.runs_of(job.id)
    assert (run.status, run.deferred_reason, run.deferred) == (RunStatus.QUEUED, DeferReason.CONCURRENCY_KEY, 8)
    assert stuck == [0] * 8  # each deferral moved its entry past the tick's reads
    assert held_back[:6] == [[]] * 6  # deferred at 0..5 minutes past its time: not yet stuck
    assert held_back[6:] == [[([["service"]], [1.0])]] * 2  # one count a deferral, beside StuckRuns
    logged = [r for r in caplog.records if getattr(r, "run_id", None) == run.id and "stuck" in r.getMessage()]
    assert len(logged) == 2
    assert {getattr(r, "reason", None) for r in logged} == {DeferReason.CONCURRENCY_KEY.value}
