"""Section 1b: AWS requests and DynamoDB capacity units per workflow step run, next to section 1's per-run figure.

Diamond workflows (a -> b, a -> c, b + c -> d; `echo` steps, b, c and d reading upstream results with
`$from`), each created through WorkflowService.create (what POST /v1/workflows calls) beyond the claim
horizon, claimed by the tick handler (which opens the workflow run and queues its root), and run by the
executor handler fed as Lambda's SQS event source mapping feeds it: each step's end records it in its
workflow run and creates and sends the steps it lets start. Every botocore call is metered
(benchmarks.common.AwsMeter) and divided by the step runs (4 per workflow run).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tickwork.control.api_bodies import WorkflowSpec
from tickwork.model.clock import iso
from tickwork.model.policies import Band

from benchmarks.calls_per_run import _fmt, _template_shards, billable, phase_rows, summarize
from benchmarks.common import API_CALLER, PhaseMeter, Stamp, moto_session
from tests.harness import START, TENANT, Pipeline

FULL = 100
QUICK = 20
STEPS = 4


def diamond(at: str, n: int) -> WorkflowSpec:
    return WorkflowSpec.model_validate(
        {
            "name": f"bench {n}",
            "schedule": {"at": at},
            "steps": [
                {"id": "a", "type": "echo", "payload": {"n": n, "rows": [1, 2, 3]}},
                {"id": "b", "type": "echo", "depends_on": ["a"], "payload": {"rows": {"$from": "steps.a.result.rows"}}},
                {"id": "c", "type": "echo", "depends_on": ["a"], "payload": {"n": {"$from": "steps.a.result.n"}}},
                {
                    "id": "d",
                    "type": "echo",
                    "depends_on": ["b", "c"],
                    "payload": {"b": {"$from": "steps.b.result.rows"}, "c": {"$from": "steps.c.result.n"}},
                },
            ],
        }
    )


def measure(workflows: int) -> dict[str, Any]:
    with moto_session(), Pipeline.create(DUE_SHARDS=_template_shards()) as pipeline:
        metered = PhaseMeter(pipeline)
        close = metered.close
        due = [START + timedelta(seconds=150, milliseconds=10 * i) for i in range(workflows)]
        created = [
            pipeline.services.workflows.create(TENANT, diamond(iso(at) or "", i), by=API_CALLER)
            for i, at in enumerate(due)
        ]
        close("create")
        pipeline.clock.advance((due[-1] - START).total_seconds() + 1)
        pipeline.tick()
        close("tick")
        delivered = _deliver_in_rounds(pipeline)
        close("execute")
        ended = [
            pipeline.services.workflows.runs(TENANT, w.id).items[0].status.value
            for w in created  # not metered
        ]
    step_runs = workflows * STEPS
    if delivered != step_runs or set(ended) != {"SUCCEEDED"}:
        raise RuntimeError(f"{delivered} of {step_runs} step runs delivered; workflow runs ended {set(ended)}")
    return {
        "workflows": workflows,
        "step_runs": step_runs,
        "phases": {phase: summarize(calls, step_runs) for phase, calls in metered.phases.items()},
        "total": summarize(metered.all_calls(), step_runs),
    }


def _deliver_in_rounds(pipeline: Pipeline) -> int:
    """The executors, round after round, a second apart: each step ends at its own time, so each step's end
    really moves its workflow run's reconciliation time (a due-index key) as it would in AWS."""
    delivered = 0
    while True:
        # What is waiting now (received before any of it runs), then run: a round is one generation of steps.
        waiting = [(band, batch) for band in Band for batch in iter(lambda band=band: pipeline.receive(band), [])]
        if not waiting:
            return delivered
        for band, batch in waiting:
            pipeline.deliver(band, batch)
            delivered += len(batch)
        pipeline.clock.advance(1)


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    measured = measure(QUICK if quick else FULL)
    return {
        "stamp": stamp.__dict__,
        **measured,
        "billable": billable(measured["total"], measured["step_runs"], creates_per_run=1 / STEPS),
    }


def render(result: dict[str, Any], requests: dict[str, Any] | None = None) -> str:
    stamp = Stamp(**result["stamp"])
    b = result["billable"]
    one_shot = requests["billable"]["ahead"] if requests else None

    def beside(key: str) -> str:
        return f" {_fmt(one_shot[key])} |" if one_shot else " - |"

    lines = [
        "## 1b. AWS requests per workflow step run",
        "",
        f"Measured by {stamp.line()}.",
        "",
        f"{result['workflows']} diamond workflows (a -> b, a -> c, b + c -> d: {result['step_runs']} `echo` step runs,"
        " b, c and d filling their payloads from upstream results with `$from`), each created through"
        " `WorkflowService.create` (what `POST /v1/workflows` calls) beyond the claim horizon, claimed by the tick"
        " handler, and run by the executor handler as in section 1. A step's end records it in its workflow run"
        " and creates and sends the steps it lets start, from the executor. Every botocore call is counted and"
        " divided by the step runs; the workflow's create and its run's opening are shared by its 4 steps.",
        "",
        f"**{_fmt(b['billable_requests'])} billable requests and {_fmt(b['wru'])} DynamoDB WRU per step run**"
        + (
            f", against {_fmt(one_shot['billable_requests'])} and {_fmt(one_shot['wru'])} per one-shot job run"
            " (section 1)."
            if one_shot
            else "."
        ),
        "",
        "| per run | workflow step run | one-shot job run (section 1) |",
        "|---|---:|---:|",
        f"| SDK requests | {_fmt(b['sdk_requests'])} |" + beside("sdk_requests"),
        f"| of which DynamoDB | {_fmt(b['dynamodb_requests'])} |" + beside("dynamodb_requests"),
        f"| of which SQS | {_fmt(b['sqs_requests'])} |" + beside("sqs_requests"),
        f"| of which S3 | {_fmt(b['s3_requests'])} |" + beside("s3_requests"),
        f"| API Gateway requests (1 per create) | {_fmt(b['apigw_requests'])} |" + beside("apigw_requests"),
        f"| Lambda invocations | {_fmt(b['lambda_invocations'])} |" + beside("lambda_invocations"),
        f"| **billable requests** | **{_fmt(b['billable_requests'])}** |" + beside("billable_requests"),
        f"| **DynamoDB WRU** | **{_fmt(b['wru'])}** |" + beside("wru"),
        f"| DynamoDB RRU | {_fmt(b['rru'])} |" + beside("rru"),
        "",
        "### By phase, service and operation",
        "",
        "| phase | operation and item | calls per step run | WRU per step run (table + indexes) | bytes billed (mean) |",
        "|---|---|---:|---|---:|",
    ]
    lines += phase_rows(result["phases"])
    execute = result["phases"]["execute"]
    updates = execute["per_run"].get("dynamodb:UpdateItem workflow run", 0)
    update_wru = sum(execute["wru_per_run"].get("dynamodb:UpdateItem workflow run", {}).values())
    run_bytes = execute["mean_item_bytes"].get("dynamodb:UpdateItem workflow run", 0)
    lines += [
        "",
        f"Where a step run's cost goes: its workflow run records each step's end and each plan that follows"
        f" ({_fmt(updates)} `UpdateItem workflow run` per step run, {_fmt(update_wru)} WRU: the item holds the"
        f" definition snapshot and the steps' map, {run_bytes} bytes here, so every write bills its size, and each"
        " step's end moves the run's reconciliation time, a `due-index` key); the executor reads the workflow run"
        " for the step's definition (`GetItem workflow run`; a job's run finds its job's spec in its message);"
        " a step that fills its payload with `$from` reads its upstream results (`s3:GetObject`). What a step run saves against a"
        " job's run: no job item of its own (no create, no claim's `UpdateItem job`, no completion), and"
        " downstream steps are created and sent by the executor that ended their last upstream step, not by a"
        " tick. A larger definition makes every one of those workflow run writes dearer: 1 WRU per started KB.",
    ]
    return "\n".join(lines)


def console(result: dict[str, Any]) -> str:
    b = result["billable"]
    return (
        f"[1b] requests per workflow step run ({result['step_runs']} step runs): {b['billable_requests']:.2f} billable"
        f" ({b['sdk_requests']:.2f} SDK calls: DynamoDB {b['dynamodb_requests']:.2f}, SQS {b['sqs_requests']:.2f},"
        f" S3 {b['s3_requests']:.2f}), {b['wru']:.2f} WRU, {b['rru']:.2f} RRU per step run"
    )
