"""Section 3: how fast one tick claims and enqueues 2,000 due runs, against moto's own ceiling.

Each measurement: a fresh pipeline (in-process moto, tables and queues from template.yaml), 2,000 one-shot
jobs stored due now (set-up, untimed), then one call of the tick's `Dispatcher.claim_due_runs()` timed
end to end. Its calls are recorded (params and timings), so the same run also measures moto's raw ceiling
for the same requests: the tick's own conditional PutItem/UpdateItem requests and SendMessageBatch
requests, replayed back to back on one thread (into a fresh table holding the same jobs and a fresh
queue), with none of Tickwork's work around them. The ratio tick / ceiling is what Tickwork's own work
(planning, pydantic, threads) costs on top of the emulator; absolute rates are moto's, not AWS's.

moto serves one request at a time and holds the GIL, so claim threads cannot overlap requests here as they
do against DynamoDB, where each request waits ~5-10 ms on the network: the thread sweep shows the
overhead of threads in moto, not their benefit in AWS (section 6 does that arithmetic).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from tickwork.store import job_to_item

from benchmarks.common import CallTimer, Stamp, median, moto_session, seed_one_shots, stopwatch
from benchmarks.fastmoto import MotoTime, fast_sqs_clock
from tests.harness import START, Pipeline

FULL = {"jobs": 2000, "repeats": 3, "sweep_jobs": 400, "shards": (1, 8, 32), "threads": (1, 8, 16)}
QUICK = {"jobs": 200, "repeats": 1, "sweep_jobs": 100, "shards": (1, 8), "threads": (1, 8)}
BASE_SHARDS, BASE_THREADS = 8, 8
REPLAY_SAMPLE = 400  # writes of each kind replayed for the ceiling (the rate is per call)


def one_tick(jobs: int, shards: int, threads: int, *, ceiling: bool) -> dict[str, Any]:
    with (
        moto_session(),
        fast_sqs_clock(),
        Pipeline.create(DUE_SHARDS=str(shards), CLAIM_THREADS=str(threads), MAX_DISPATCH_PER_TICK="5000") as pipeline,
    ):
        timer = CallTimer()
        for service in ("dynamodb", "sqs"):
            timer.attach(pipeline.services.clients.client(service))
        due_at = START + timedelta(seconds=150)
        seeded = seed_one_shots(pipeline, jobs, due_at, tag="rate")
        pipeline.clock.advance(151)
        pipeline.calls.clear()
        timer.clear()
        moto = MotoTime()
        with moto.measuring(), stopwatch(quiet_gc=True) as elapsed:
            report = pipeline.services.dispatcher.claim_due_runs()
        seconds = elapsed()
        if report.dispatched != jobs:
            raise RuntimeError(f"tick dispatched {report.dispatched} of {jobs}")
        calls = pipeline.calls.by_operation()
        result: dict[str, Any] = {
            "jobs": jobs,
            "shards": shards,
            "threads": threads,
            "seconds": seconds,
            "runs_per_s": jobs / seconds,
            "query_s": timer.window("Query"),
            "calls": dict(calls),
            # With one claim thread nothing overlaps: the rest is the client's CPU (Tickwork + botocore).
            "moto_s": moto.seconds,
            "client_ms_per_run": (seconds - moto.seconds) / jobs * 1000,
        }
        result["claim_send_s"] = seconds - result["query_s"]
        if ceiling:
            result["ceiling"] = replay(pipeline, seeded)
            c = result["ceiling"]
            # The same requests back to back: the tick's counts at the replayed per-call rates.
            ceiling_s = (
                calls.get("PutItem", 0) * c["put_s"]
                + calls.get("UpdateItem", 0) * c["update_s"]
                + calls.get("SendMessageBatch", 0) * c["send_batch_s"]
            )
            result["ceiling_s"] = ceiling_s
            result["ceiling_runs_per_s"] = jobs / ceiling_s
            result["ratio"] = (jobs / result["claim_send_s"]) / result["ceiling_runs_per_s"]
            result["ratio_whole_tick"] = result["runs_per_s"] / result["ceiling_runs_per_s"]
        return result


def replay(pipeline: Any, seeded: list[Any]) -> dict[str, float]:
    """moto's raw per-call cost for the tick's own requests, replayed on one thread with nothing around them."""
    db = pipeline.services.clients.client("dynamodb")
    sqs = pipeline.services.clients.client("sqs")
    table = pipeline.resources.table_name
    spec = db.describe_table(TableName=table)["Table"]
    raw = f"{table}-raw"
    db.create_table(
        TableName=raw,
        KeySchema=spec["KeySchema"],
        AttributeDefinitions=spec["AttributeDefinitions"],
        BillingMode="PAY_PER_REQUEST",
        GlobalSecondaryIndexes=[
            {"IndexName": g["IndexName"], "KeySchema": g["KeySchema"], "Projection": g["Projection"]}
            for g in spec.get("GlobalSecondaryIndexes", [])
        ],
    )
    shards = pipeline.services.store.shards
    for start in range(0, len(seeded), 25):
        items = [{"PutRequest": {"Item": job_to_item(job, shards)}} for job in seeded[start : start + 25]]
        db.batch_write_item(RequestItems={raw: items})
    puts = [p for p in pipeline.calls.params("PutItem") if p["Item"]["pk"]["S"].startswith("JOB#")]
    updates = [p for p in pipeline.calls.params("UpdateItem") if p["Key"]["pk"]["S"].startswith("JOB#")]
    batches = pipeline.calls.params("SendMessageBatch")
    queue = sqs.create_queue(QueueName="bench-raw-ceiling")["QueueUrl"]

    def loop(calls: list[dict[str, Any]], send: Any) -> float:
        with stopwatch(quiet_gc=True) as elapsed:
            for params in calls:
                send(params)
        return elapsed() / max(1, len(calls))

    put_s = loop(puts[:REPLAY_SAMPLE], lambda p: db.put_item(**{**p, "TableName": raw}))
    update_s = loop(updates[:REPLAY_SAMPLE], lambda p: db.update_item(**{**p, "TableName": raw}))
    # All of them: moto's SendMessageBatch slows as the queue fills, as it did during the tick.
    send_s = loop(batches, lambda p: sqs.send_message_batch(**{**p, "QueueUrl": queue}))
    return {
        "put_s": put_s,
        "update_s": update_s,
        "send_batch_s": send_s,
        "put_per_s": 1 / put_s,
        "update_per_s": 1 / update_s,
        "send_batch_per_s": 1 / send_s,
    }


def run(stamp: Stamp, *, quick: bool) -> dict[str, Any]:
    plan = QUICK if quick else FULL
    base = [one_tick(plan["jobs"], BASE_SHARDS, BASE_THREADS, ceiling=True) for _ in range(plan["repeats"])]
    sweep: list[dict[str, Any]] = []
    configs = [(s, BASE_THREADS) for s in plan["shards"]] + [(BASE_SHARDS, t) for t in plan["threads"]]
    for shards, threads in dict.fromkeys(configs):
        sweep.append(one_tick(plan["sweep_jobs"], shards, threads, ceiling=False))
    return {
        "stamp": stamp.__dict__,
        "jobs": plan["jobs"],
        "repeats": plan["repeats"],
        "sweep_jobs": plan["sweep_jobs"],
        "base": base,
        "median": {
            key: median([b[key] for b in base])
            for key in (
                "seconds",
                "runs_per_s",
                "query_s",
                "claim_send_s",
                "ceiling_runs_per_s",
                "ratio",
                "ratio_whole_tick",
            )
        },
        "ceiling_median": {
            key: median([b["ceiling"][key] for b in base]) for key in ("put_per_s", "update_per_s", "send_batch_per_s")
        },
        "sweep": sweep,
    }


# ---------------------------------------------------------------- rendering


def render(result: dict[str, Any]) -> str:
    stamp = Stamp(**result["stamp"])
    m, c = result["median"], result["ceiling_median"]
    base0 = result["base"][0]
    calls = ", ".join(f"{n} {op}" for op, n in sorted(base0["calls"].items()))
    each = ", ".join(f"{b['ratio']:.2f}" for b in result["base"])
    lines = [
        "## 3. Dispatch rate of one tick",
        "",
        f"Measured by {stamp.line()}.",
        "",
        f"One tick (`Dispatcher.claim_due_runs()`) over {result['jobs']:,} one-shot jobs all due, in-process moto,"
        f" `DUE_SHARDS={BASE_SHARDS}`, `CLAIM_THREADS={BASE_THREADS}`; median of {result['repeats']} fresh runs."
        " moto's raw ceiling is measured in the same run, from the same requests: the tick's own conditional"
        " `PutItem`/`UpdateItem` requests and `SendMessageBatch` requests, replayed back to back on one thread"
        " into a fresh table (holding the same jobs) and a fresh queue.",
        "",
        "| | median |",
        "|---|---:|",
        f"| tick, end to end | {m['seconds']:.1f} s = **{m['runs_per_s']:.0f} runs/s** claimed and enqueued |",
        f"| of which the due-index queries (moto scans the index) | {m['query_s']:.1f} s |",
        f"| of which claims and sends | {m['claim_send_s']:.1f} s = {result['jobs'] / m['claim_send_s']:.0f} runs/s |",
        f"| moto's raw ceiling for the same writes and sends | {m['ceiling_runs_per_s']:.0f} runs/s"
        f" (PutItem {c['put_per_s']:.0f}/s, UpdateItem {c['update_per_s']:.0f}/s,"
        f" SendMessageBatch {c['send_batch_per_s']:.0f}/s) |",
        f"| **claims and sends / ceiling (same run)** | **{m['ratio']:.2f}** |",
        f"| whole tick / ceiling | {m['ratio_whole_tick']:.2f} |",
        f"| claims and sends / ceiling, each run | {each} |",
        "",
        f"The tick's requests: {calls}.",
        "",
        "Every run costs the tick one conditional `PutItem` (the run) and one conditional `UpdateItem` (the job),"
        " plus a tenth of a `SendMessageBatch`, so a tick is bound by the rate of conditional writes. In moto"
        " that is one or two hundred per second (the ceiling row), and requests are served one at a time (the atomicity patch) under the"
        " GIL. A ratio near 1 means the tick costs little more than the emulator's own handling of its requests;"
        " the spread between runs (last row) is the noise of this machine, and a run above 1 is within it (the"
        " replay runs after the tick, single-threaded, in a process holding twice the data).",
        "",
        f"### Shards and claim threads ({result['sweep_jobs']:,} due jobs, one run each)",
        "",
        "| DUE_SHARDS | CLAIM_THREADS | tick s | runs/s | queries s | client CPU per run |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for s in result["sweep"]:
        # Only with one thread is "tick time minus time inside moto" the client's CPU (no lock waits).
        cpu = f"{s['client_ms_per_run']:.1f} ms" if s["threads"] == 1 else ""
        lines.append(
            f"| {s['shards']} | {s['threads']} | {s['seconds']:.1f} | {s['runs_per_s']:.0f} | {s['query_s']:.1f} |"
            f" {cpu} |"
        )
    lines += [
        "",
        "More shards means more queries per tick (one per shard, and more pages in total); in moto each query"
        " walks the whole index, so time grows with shards. Threads cannot overlap requests in moto (one request"
        " at a time, GIL), so the thread sweep shows only their overhead. Against DynamoDB, where a conditional"
        " write waits ~5-10 ms on the network, claims scale with threads until the Lambda's CPU saturates:"
        " section 6 uses that. The client CPU per run (one thread: tick time minus the time spent inside"
        " moto) is Tickwork's and botocore's own work per claim, which no thread count hides.",
    ]
    return "\n".join(lines)


def console(result: dict[str, Any]) -> str:
    m = result["median"]
    return (
        f"[3] dispatch rate: {result['jobs']} due runs in {m['seconds']:.1f} s = {m['runs_per_s']:.0f} runs/s"
        f" (queries {m['query_s']:.1f} s); claims+sends / moto ceiling = {m['ratio']:.2f}"
    )
