"""Job types for the durable runs' tests (docs/durable-runs.md): a paged export that checkpoints per page, and a
handler of steps; each records what really executed."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, StrictBool
from tickwork.jobtypes import CheckpointNotJSON, CheckpointTooLarge, RunContext, job_type, registry
from tickwork.jobtypes.durable import MAX_CHECKPOINT_BYTES
from tickwork.model.policies import NotCoerced

from tests.faults.crashes import ProcessKilled

# Per run: the page each execution of the handler started from, and each step's real calls.
STARTS: defaultdict[str, list[int]] = defaultdict(list)
STEP_CALLS: Counter[tuple[str, str]] = Counter()
FAILED_ONCE: set[str] = set()


# -1: never. Not nullable: these types are registered for the whole test session, and no payload field in the
# API's document may be nullable (tests/api/test_promises_hardened_api.py).
# The test types' payloads take JSON's types only, as the built-in types' do (NotCoerced, StrictBool): the
# OpenAPI document gives each registered type's schema, and the fuzz checks the server refuses what it excludes.


class Export(BaseModel):
    pages: Annotated[int, NotCoerced] = 4
    # The first execution dies (SIGKILL) right after this page's checkpoint.
    die_after_page: Annotated[int, NotCoerced] = -1
    fail_after_page: Annotated[int, NotCoerced] = -1  # the first execution raises right after this page's checkpoint
    padding: Annotated[int, NotCoerced] = 0  # bytes of filler in each checkpoint (to send it to S3)
    # Tries to save a state JSON cannot hold, then one too large, and goes on.
    bad_state_at_page: Annotated[int, NotCoerced] = -1


if "checkpoint-export" not in registry:

    @job_type("checkpoint-export", Export)
    def export(payload: Export, ctx: RunContext) -> dict[str, Any]:
        """Exports `pages` pages, one checkpoint per page; dies or fails once where asked."""
        state = ctx.last_checkpoint() or {"next_page": 0, "rows": []}
        STARTS[ctx.run_id].append(state["next_page"])
        for page in range(state["next_page"], payload.pages):
            if payload.bad_state_at_page == page:
                with pytest.raises(CheckpointNotJSON):
                    ctx.checkpoint({"at": object()})
                with pytest.raises(CheckpointTooLarge) as too_large:
                    ctx.checkpoint({"filler": "x" * MAX_CHECKPOINT_BYTES})
                assert (too_large.value.limit, too_large.value.size > MAX_CHECKPOINT_BYTES) == (
                    MAX_CHECKPOINT_BYTES,
                    True,
                )
                assert ctx.last_checkpoint() == state  # the previous one stands
            state = {"next_page": page + 1, "rows": [*state["rows"], page * 10], "filler": "x" * payload.padding}
            ctx.checkpoint(state)
            first = ctx.run_id not in FAILED_ONCE
            if payload.die_after_page == page and first:
                FAILED_ONCE.add(ctx.run_id)
                raise ProcessKilled("killed after a checkpoint")
            if payload.fail_after_page == page and first:
                FAILED_ONCE.add(ctx.run_id)
                raise RuntimeError(f"failed after page {page}")
        return {"rows": state["rows"]}


class Steps(BaseModel):
    names: list[str] = ["charge", "ship", "notify"]


if "checkpoint-steps" not in registry:

    @job_type("checkpoint-steps", Steps)
    def steps(payload: Steps, ctx: RunContext) -> dict[str, Any]:
        """Runs one step more on each attempt, then fails, until the last attempt runs them all."""
        done = {}
        for index, name in enumerate(payload.names):

            def call(name: str = name) -> str:
                STEP_CALLS[(ctx.run_id, name)] += 1
                return f"{name} at attempt {ctx.attempt}"

            done[name] = ctx.step(name, call)
            if index + 1 == ctx.attempt and ctx.attempt < len(payload.names):
                raise RuntimeError(f"attempt {ctx.attempt} fails after step {name}")
        return done


class Reports(BaseModel):
    reports: list[dict[str, Any]] = []  # each: ctx.progress(**report), in order, no time between them
    sleep: Annotated[float, NotCoerced] = 0  # then ctx.sleep (the fake clock moves; the heartbeat beats)
    hold: StrictBool = False  # then wait for RELEASE (a test reads the run meanwhile: REPORTED says when)


REPORTED = threading.Event()
RELEASE = threading.Event()


if "progress-reports" not in registry:

    @job_type("progress-reports", Reports)
    def progress_reports(payload: Reports, ctx: RunContext) -> dict[str, Any]:
        """Reports progress as told, then sleeps or holds."""
        for report in payload.reports:
            ctx.progress(**report)
        REPORTED.set()
        if payload.sleep:
            ctx.sleep(payload.sleep)
        if payload.hold and not RELEASE.wait(timeout=30):
            raise RuntimeError("never released")
        return {"reported": len(payload.reports)}


class Chatty(BaseModel):
    lines: list[str] = []  # logged first
    # Then ctx.sleep: past one heartbeat (lease/3 = 20 s), which flushes the lines.
    sleep: Annotated[float, NotCoerced] = 25
    after: list[str] = []  # logged after the sleep (no beat flushes them)
    die_once: StrictBool = False  # the first execution then dies (SIGKILL)
    hold: StrictBool = False  # then wait for RELEASE (REPORTED says it is waiting)


if "live-logs" not in registry:

    @job_type("live-logs", Chatty)
    def live_logs(payload: Chatty, ctx: RunContext) -> dict[str, Any]:
        """Logs, sleeps past a heartbeat, logs more; dies once, or holds, where asked."""
        for line in payload.lines:
            ctx.log(line, page=line)
        ctx.sleep(payload.sleep)
        for line in payload.after:
            ctx.log(line)
        if payload.die_once and ctx.run_id not in FAILED_ONCE:
            FAILED_ONCE.add(ctx.run_id)
            raise ProcessKilled("killed after logging")
        REPORTED.set()
        if payload.hold and not RELEASE.wait(timeout=30):
            raise RuntimeError("never released")
        return {"logged": len(payload.lines) + len(payload.after)}


class LongExport(BaseModel):
    pages: Annotated[int, NotCoerced] = 12
    # Each page's work (ctx.sleep: the fake clock moves, the heartbeat beats).
    page_seconds: Annotated[float, NotCoerced] = 10
    cooperative: StrictBool = True  # checks should_yield after each page; else ignores it (the executor yields it)
    fail_once_at_page: Annotated[int, NotCoerced] = -1  # the first execution raises as it starts this page


if "long-export" not in registry:

    @job_type("long-export", LongExport)
    def long_export(payload: LongExport, ctx: RunContext) -> dict[str, Any]:
        """Exports page after page, each a step (its rows once), checkpointing where it got to."""
        state = ctx.last_checkpoint() or {"next_page": 0}
        for page in range(state["next_page"], payload.pages):
            if payload.fail_once_at_page == page and ctx.run_id not in FAILED_ONCE:
                FAILED_ONCE.add(ctx.run_id)
                raise RuntimeError(f"failed at page {page}")

            def fetch(page: int = page) -> list[int]:
                ctx.sleep(payload.page_seconds)  # a page cut short by the Lambda's end is fetched again
                STEP_CALLS[(ctx.run_id, f"page-{page}")] += 1  # its effect, once it is fetched
                return [page * 10, page * 10 + 1]

            ctx.step(f"page-{page}", fetch)
            ctx.checkpoint({"next_page": page + 1})
            ctx.progress((page + 1) / payload.pages, f"page {page + 1} of {payload.pages}")
            if payload.cooperative and page + 1 < payload.pages and ctx.should_yield():
                return ctx.yield_run()
        rows = [row for page in range(payload.pages) for row in ctx.step(f"page-{page}", list)]
        return {"rows": rows}
