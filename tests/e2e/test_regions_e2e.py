"""A region's failure, end to end, in each mode of `tickwork dev --regions us-east-1,us-west-2 --region-mode M`,
under a steady load of one-shots, a cron and a workflow; every node of one region is SIGKILLed mid-load through the control API.

- strong: both regions' nodes on one table (as MRSC); the other region carries on alone.
- eventual: a table each and the local MREC replicator; us-east-1 is active (the local runtime makes the first region
  active, epoch 1) and us-west-2 passive, which claims and runs nothing; the active one is killed, then
  `POST /v1/regions/failover {"to": "us-west-2", "force": true}` (what `tickwork regions failover --to us-west-2
  --force` sends: the killed region cannot confirm replication) makes us-west-2 active under epoch 2. And, with both
  regions alive, a failover without force: the handover, then, once the probe says replication has caught up, the
  target active (epoch 3), nothing reported to run twice.

Counted over the surviving region's API: no occurrence lost, no duplicated run record (each occurrence has exactly
one), effects run twice (a run's completion printed twice) none in strong and only runs the forced failover reported
in eventual, every run terminal within a bound after the kill (eventual: after the failover); and the time from the
kill to the first run the surviving region starts. The workflow (a diamond of `echo` steps whose first step is
running at the kill) counts too: its run succeeded within its bound (the first step's recovery, then the rest) and
each step's completion was printed once (eventual: more only within the reported set). The figures are printed
(docs/local.md, "Several regions"; docs/regions.md, "The drills").

The bound is the product's, with the lease the template's LeaseSeconds (10 here): a run the dead region had claimed
but not run is re-sent by the survivor's tick 30 s after its time (tickwork.tick.resender's redispatch_after), one it
was running once its lease has lapsed by as much.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tickwork.model.clock import iso, stored_instant

from tests.e2e.conftest import BIN, Api
from tests.processes import Proc, wait_for

pytestmark = pytest.mark.e2e

REGIONS_READY_SECONDS = 90  # endpoints, the tables and every node: slow when the machine is shared
CONTROL_LINE = re.compile(r"^  Control  (?P<url>http://\S+/regions)")
# `run SUCCEEDED  NAME (RUN) scheduled ...`, NAME a job's name or `step S of WORKFLOW-RUN`, or `run SUCCEEDED  RUN
# scheduled ...` when the node does not know the job's name: tickwork_local.runtime.observe.
COMPLETION = re.compile(r"run SUCCEEDED\s+(?:.*?\((?P<named>[^()\s]+)\)|(?P<bare>\S+)) scheduled")
NODE_TAG = re.compile(r"^\[(?P<node>[^\]]+)\] ")
LEASE_SECONDS = 10
TICK_SECONDS = 2
REDISPATCH_AFTER = 30  # tickwork.tick.dispatch.Dispatcher's redispatch_after
FINISHED = ("SUCCEEDED", "FAILED", "SKIPPED", "CANCELLED")
# a -> b, a -> c, due 2 s into the load: a runs for 1 s, so the kill (at 2.5 s) lands while it runs, and its
# completion dispatches two steps.
DIAMOND = [
    {"id": "a", "type": "echo", "payload": {"step": "a", "sleep_seconds": 1}},
    {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"from_a": {"$from": "steps.a.result.step"}}},
    {"id": "c", "type": "echo", "depends_on": ["a"], "payload": {"step": "c"}},
]
RECOVERY_BOUND = LEASE_SECONDS + REDISPATCH_AFTER + 2 * TICK_SECONDS  # after the kill, or the run's time if later
# The workflow's run: its first step's recovery, then that step's second and its two steps dispatched and run.
WORKFLOW_BOUND = RECOVERY_BOUND + 5


@dataclass
class Regions:
    proc: Proc
    control_url: str
    apis: dict[str, Api]  # each region's first node

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.control_url, timeout=10) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def kill(self, region: str) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.control_url}/{region}/kill", method="POST")
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def completions(self) -> list[tuple[str, str]]:
        """(node, run id) of every success a node printed, in order."""
        found = []
        for line in list(self.proc.lines):
            tag, done = NODE_TAG.match(line), COMPLETION.search(line)
            if tag and done:
                found.append((tag["node"], done["named"] or done["bare"]))
        return found


@contextmanager
def running_regions(mode: str, regions: list[str], *args: str) -> Iterator[Regions]:
    """`tickwork dev --regions` in `mode` on ports it picks; stopped (and checked to stop cleanly) on leaving."""
    command = [str(BIN / "tickwork"), "dev", "--regions", ",".join(regions), "--region-mode", mode]
    command += ["--port", "0", "--moto-port", "0", "--control-port", "0", *args]
    proc = Proc.start(f"regions-{mode}", command)
    try:
        proc.wait_line("regions ready in", REGIONS_READY_SECONDS)
        control = proc.wait_match(CONTROL_LINE, 1)["url"]
        started = Regions(proc, control, {})
        status = started.status()
        started.apis = {region: Api(s["nodes"][0]["api_url"]) for region, s in status["regions"].items()}
        yield started
        assert proc.terminate(30) == 0, proc.output()
    finally:
        proc.kill()


@dataclass
class Load:
    expected: dict[str, set[datetime]]  # each job's occurrences
    workflow_id: str
    base: datetime  # the load's first instant


def _load(create_through: list[Api]) -> Load:
    """A one-shot every 0.5 s for 6 s, created in turn through each of `create_through`; a cron every 2 s over the same
    6 s (start and end on odd seconds, so its occurrences are the even seconds between, whatever the bounds' sense);
    the diamond workflow once, 2 s in."""
    base = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=5)
    base += timedelta(seconds=base.second % 2)  # an even second: the cron's bounds below fall on odd ones
    expected: dict[str, set[datetime]] = {}
    for i in range(12):
        at = base + timedelta(seconds=0.5 * i)
        api = create_through[(i + 1) % len(create_through)]
        job = api.create_job(name=f"one-shot-{i}", payload={"i": i}, schedule={"at": iso(at)})
        expected[job["id"]] = {at}
    start, end = base + timedelta(seconds=1), base + timedelta(seconds=7)
    cron = create_through[0].create_job(
        name="cron-2s",
        payload={"cron": True},
        schedule={"cron": "*/2 * * * * *", "timezone": "UTC", "start_at": iso(start), "end_at": iso(end)},
    )
    expected[cron["id"]] = {start + timedelta(seconds=s) for s in range(1, 6, 2)}
    workflow = create_through[-1].post(
        "/v1/workflows",
        {"name": "diamond", "schedule": {"at": iso(base + timedelta(seconds=2))}, "steps": DIAMOND},
        expect=201,
    )
    assert datetime.now(UTC) < base, "the load was created too slowly to be scheduled ahead"
    return Load(expected, workflow["id"], base)


def _workflow_runs(api: Api, workflow_id: str) -> list[dict[str, Any]]:
    return api.get(f"/v1/workflows/{workflow_id}/runs")["items"]  # type: ignore[no-any-return]


def _count(
    regions: Regions, survivor: str, load: Load, recovering_from: datetime, killed_at: datetime
) -> dict[str, Any]:
    """Wait until every occurrence's run, and the workflow's run, is terminal in `survivor` (bound: RECOVERY_BOUND
    after `recovering_from`, or the run's time if later), then count: the figures."""
    api, expected = regions.apis[survivor], load.expected
    total = sum(len(times) for times in expected.values())

    def runs_now() -> dict[str, list[dict[str, Any]]]:
        return {job_id: api.runs(job_id) for job_id in expected}

    def all_terminal() -> dict[str, list[dict[str, Any]]] | None:
        runs = runs_now()
        done = [r for found in runs.values() for r in found if r["status"] in FINISHED]
        workflow_done = [r for r in _workflow_runs(api, load.workflow_id) if r["status"] in FINISHED]
        return runs if len(done) >= total and workflow_done else None

    last_due = max(t for times in expected.values() for t in times)
    deadline = (max(recovering_from, last_due) + timedelta(seconds=WORKFLOW_BOUND)) - datetime.now(UTC)
    try:
        wait_for(all_terminal, max(1.0, deadline.total_seconds()) + 5, 0.5, "every run terminal")
    except AssertionError as timed_out:
        not_ended = [
            (r["id"], r["status"]) for found in runs_now().values() for r in found if r["status"] not in FINISHED
        ]
        workflow = [(w["id"], w["status"], w["steps"]) for w in _workflow_runs(api, load.workflow_id)]
        raise AssertionError(f"{timed_out}; not ended: {not_ended}; the workflow's runs: {workflow}") from None
    time.sleep(TICK_SECONDS)  # a late duplicate would be recorded by now
    runs = runs_now()

    lost = sum(len(expected[j] - {stored_instant(r["scheduled_for"]) for r in found}) for j, found in runs.items())
    per_occurrence = Counter((j, r["scheduled_for"]) for j, found in runs.items() for r in found)
    flat = [r for found in runs.values() for r in found]
    over_bound = [
        r
        for r in flat
        if (stored_instant(r["finished_at"]) - max(recovering_from, stored_instant(r["scheduled_for"]))).total_seconds()
        > RECOVERY_BOUND
    ]
    completions = regions.completions()
    workflow_runs = _workflow_runs(api, load.workflow_id)
    step_runs = [api.get(f"/v1/runs/{s['run_id']}") for w in workflow_runs for s in w["steps"].values() if s["run_id"]]
    flat_with_steps = flat + step_runs
    by_id = {r["id"]: r for r in flat_with_steps}
    survivor_starts = sorted(
        stored_instant(by_id[run]["started_at"])
        for node, run in completions
        if node.startswith(survivor) and run in by_id and stored_instant(by_id[run]["started_at"]) > killed_at
    )
    ready = regions.proc.wait_match(re.compile(r"^regions ready in (?P<s>[0-9.]+) s"), 1)
    return {
        "regions_ready_s": float(ready["s"]),
        "occurrences": total,
        "runs": len(flat),
        "lost": lost,
        "duplicated_run_records": sum(n - 1 for n in per_occurrence.values() if n > 1),
        "effects_run_twice": sorted(run for run, n in Counter(run for _, run in completions).items() if n > 1),
        "not_succeeded": len([r for r in flat if r["status"] != "SUCCEEDED"]),
        "terminal_after_kill_s_max": round(
            max((stored_instant(r["finished_at"]) - killed_at).total_seconds() for r in flat_with_steps), 1
        ),
        "bound_s": RECOVERY_BOUND,
        "workflow_bound_s": WORKFLOW_BOUND,
        "over_bound": len(over_bound),
        "kill_to_first_survivor_run_s": round((survivor_starts[0] - killed_at).total_seconds(), 2)
        if survivor_starts
        else None,
        "workflow_runs": len(workflow_runs),
        "workflow_runs_not_succeeded": len([w for w in workflow_runs if w["status"] != "SUCCEEDED"]),
        "workflow_finished_after_kill_s": [
            round((stored_instant(w["finished_at"]) - killed_at).total_seconds(), 1)
            for w in workflow_runs
            if w["finished_at"]
        ],
        "workflow_over_bound": len(
            [
                w
                for w in workflow_runs
                if (
                    stored_instant(w["finished_at"]) - max(recovering_from, stored_instant(w["scheduled_for"]))
                ).total_seconds()
                > WORKFLOW_BOUND
            ]
        ),
        "step_runs": len(step_runs),
        "step_runs_not_succeeded": len([r for r in step_runs if r["status"] != "SUCCEEDED"]),
        "step_runs_completed": dict(Counter(run for _, run in completions if run in {r["id"] for r in step_runs})),
        "runs_by_region": dict(Counter(node for node, _ in completions)),
        # By its finish: a run the dead region had started and the survivor ran again can keep the first start.
        "survivor_runs_finished_before_recovery": sum(
            1
            for node, run in completions
            if node.startswith(survivor)
            and run in by_id
            and stored_instant(by_id[run]["finished_at"]) <= recovering_from
        ),
    }


def _assert_workflow_counted(figures: dict[str, Any], possibly_twice: set[str]) -> None:
    """The workflow's one run terminal and succeeded within the bound; each step run once, or (eventual) more only
    if the forced failover reported it."""
    assert (figures["workflow_runs"], figures["step_runs"]) == (1, len(DIAMOND)), figures
    assert figures["workflow_runs_not_succeeded"] == figures["workflow_over_bound"] == 0, figures
    assert figures["step_runs_not_succeeded"] == 0, figures
    assert len(figures["step_runs_completed"]) == len(DIAMOND), figures  # each step's completion printed
    twice = {run for run, n in figures["step_runs_completed"].items() if n > 1}
    assert twice <= possibly_twice, figures


def _read_across(regions: Regions, completed: list[tuple[str, str]], load: Load, executed_in: str, read_in: str) -> str:
    """A one-shot's run that `executed_in` completed: its record names that region, and `read_in`'s API, whose own
    bucket lacks the result, reads it from `executed_in`'s bucket (docs/regions.md, "Results"). The run's id."""
    run_id = next(run for node, run in completed if node.startswith(executed_in) and run.split(".")[0] in load.expected)
    api = regions.apis[read_in]
    run = api.get(f"/v1/runs/{run_id}")
    assert run["result"]["region"] == executed_in, run
    assert api.get(f"/v1/runs/{run_id}/result") == api.get(f"/v1/jobs/{run['job_id']}")["payload"]
    return run_id


def test_strong_regions_survive_one_region_killed_mid_load_with_nothing_lost_or_doubled() -> None:
    east, west = "us-east-1", "us-west-2"
    with running_regions(
        "strong", [east, west], "--tick-seconds", str(TICK_SECONDS), "--parameter", f"LeaseSeconds={LEASE_SECONDS}"
    ) as regions:
        load = _load([regions.apis[west], regions.apis[east]])
        wait_for(lambda: datetime.now(UTC) >= load.base + timedelta(seconds=2.5), 30, 0.1, "mid-load")
        killed = regions.kill(east)
        killed_at = stored_instant(killed["at"])
        assert killed["killed"], "no node of the region was running"

        figures = _count(regions, west, load, killed_at, killed_at)
        # The killed region's endpoint (its bucket) stays: the survivor reads a result east recorded there.
        figures["result_read_across"] = _read_across(regions, regions.completions(), load, east, west)
        print(json.dumps(figures, indent=2))
        assert figures["lost"] == figures["duplicated_run_records"] == 0, figures
        assert figures["effects_run_twice"] == [], figures
        assert figures["not_succeeded"] == figures["over_bound"] == 0, figures
        assert figures["runs"] == figures["occurrences"], figures
        assert figures["kill_to_first_survivor_run_s"] is not None, "the surviving region ran nothing after the kill"
        _assert_workflow_counted(figures, possibly_twice=set())
        assert regions.status()["regions"][east]["nodes"][0]["alive"] is False


def test_eventual_regions_fail_over_after_the_active_region_is_killed_doubling_only_the_reported_runs() -> None:
    east, west = "us-east-1", "us-west-2"
    with running_regions(
        "eventual",
        [east, west],
        "--tick-seconds",
        str(TICK_SECONDS),
        "--parameter",
        f"LeaseSeconds={LEASE_SECONDS}",
        "--replication-lag",
        "1",
    ) as regions:
        seen_by_west = regions.apis[west].get("/v1/regions")
        assert (seen_by_west["mode"], seen_by_west["active_region"], seen_by_west["epoch"]) == ("eventual", east, 1)
        load = _load([regions.apis[east]])  # through the active region
        wait_for(lambda: datetime.now(UTC) >= load.base + timedelta(seconds=2.5), 30, 0.1, "mid-load")
        before_kill = regions.completions()
        assert before_kill, "the active region ran nothing before the kill"
        assert all(node.startswith(east) for node, _ in before_kill), f"the passive region ran: {before_kill}"
        killed = regions.kill(east)
        killed_at = stored_instant(killed["at"])
        assert killed["killed"], "no node of the region was running"
        failover = regions.apis[west].post("/v1/regions/failover", {"to": west, "force": True})
        failed_over_at = stored_instant(failover["since"])
        assert (failover["active_region"], failover["epoch"], failover["forced"]) == (west, 2, True), failover

        figures = _count(regions, west, load, failed_over_at, killed_at)
        figures["kill_to_failover_s"] = round((failed_over_at - killed_at).total_seconds(), 2)
        figures["reported_possibly_twice"] = len(failover["possibly_twice"])
        figures["replication"] = regions.status()["replication"]
        health = regions.apis[west].get("/v1/health")["region"]  # its lag: read at most once a minute
        figures["west_health"] = {k: health[k] for k in ("active_region", "epoch", "replication_lag_ms")}
        figures["west_health"]["replication_lag_reason"] = health["replication_lag_reason"]
        figures["result_read_across"] = _read_across(regions, before_kill, load, east, west)
        print(json.dumps(figures, indent=2))
        assert figures["lost"] == figures["duplicated_run_records"] == 0, figures
        assert set(figures["effects_run_twice"]) <= set(failover["possibly_twice"]), figures
        assert figures["not_succeeded"] == figures["over_bound"] == 0, figures
        assert figures["runs"] == figures["occurrences"], figures
        assert figures["kill_to_first_survivor_run_s"] is not None, "the surviving region ran nothing after the kill"
        assert figures["survivor_runs_finished_before_recovery"] == 0, "the passive region ran before the failover"
        _assert_workflow_counted(figures, possibly_twice=set(failover["possibly_twice"]))
        assert regions.apis[west].get("/v1/regions")["active_region"] == west


HANDOVER_BOUND_SECONDS = 150  # the probe's wait (FENCE_READ_TO_WRITE + latency + margin: ~71 s) and the asks between
FIRST_LATENCY_SECONDS = 20  # tickwork_local.aws.replication_latency's period (10 s), and some


def test_eventual_a_live_active_region_hands_over_without_force_once_replication_has_caught_up() -> None:
    """The failover's two steps against the target's API, over the local replicator: the handover, which the old
    region's API shows once replicated; then the target's probe reads us-east-1's table and CloudWatch through
    us-east-1's own endpoint, as on AWS, and the target becomes active with nothing reported to run twice."""
    east, west = "us-east-1", "us-west-2"
    with running_regions("eventual", [east, west], "--replication-lag", "1") as regions:
        target = regions.apis[west]
        handover = target.post("/v1/regions/failover", {"to": west}, expect=409)
        assert f"handing over from {east} to {west}" in handover["detail"], handover
        asked_at = time.monotonic()
        wait_for(
            lambda: regions.apis[east].get("/v1/regions")["handing_over_to"] == west, 30, 0.2, "the handover replicated"
        )
        done: dict[str, Any] | None = None
        while done is None and time.monotonic() - asked_at < HANDOVER_BOUND_SECONDS:
            time.sleep(5)  # as the CLI asks again
            answer = target.post("/v1/regions/failover", {"to": west}, expect=(200, 409))
            if "active_region" in answer:
                done = answer
            elif "no ReplicationLatency data" in answer["detail"]:
                # The local runtime puts its first latencies into CloudWatch 10 s after its replicator starts.
                assert time.monotonic() - asked_at < FIRST_LATENCY_SECONDS, answer
            else:
                assert "replication has not caught up" in answer["detail"], answer
        assert done is not None, f"not active within {HANDOVER_BOUND_SECONDS} s"
        waited = time.monotonic() - asked_at
        print(json.dumps({"handover_to_active_s": round(waited, 1), "failover": done}, indent=2))
        assert (done["active_region"], done["epoch"], done["previous_region"]) == (west, 3, east), done
        assert (done["forced"], done["possibly_twice"]) == (False, []), done
        assert waited >= 70, waited  # FENCE_READ_TO_WRITE (60 s) + REPLICATION_MARGIN (10 s) at least
        wait_for(lambda: regions.apis[east].get("/v1/regions")["active_region"] == west, 30, 0.2, "replicated")
