"""`make bench` / `make bench-quick`: run the benchmarks, print their tables, write docs/benchmarks.md.

    python -m benchmarks.run                  # everything (~16 min on 2 cores, 6 of them burst); writes docs/benchmarks.md
    python -m benchmarks.run --quick          # smaller sizes (< 4 min), prints only (CI)
    python -m benchmarks.run --only lateness  # some sections; the others keep their last results

Results are kept in benchmarks/results.json (full runs only), from which docs/benchmarks.md is rendered,
so a section run alone (or still pending) does not erase the others' figures.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
import warnings
from typing import Any

from benchmarks import ROOT, prepare_environment

# Before the sections import boto3, Powertools and the domain: fake credentials, no X-Ray, no EMF lines.
prepare_environment()

from benchmarks import (  # noqa: E402
    burst,
    calls_per_durable_op,
    calls_per_run,
    calls_per_step,
    capacity,
    cold_start,
    cost,
    dispatch_rate,
    fairness,
    fanout,
    idle_scaling,
    lateness,
    precise,
    scale,
)
from benchmarks.common import Stamp  # noqa: E402

SECTIONS = (
    "requests",
    "workflows",
    "durable",
    "cost",
    "dispatch",
    "scaling",
    "lateness",
    "fairness",
    "capacity",
    "burst",
    "fanout",
    "precise",
    "cold",
)
RESULTS = ROOT / "benchmarks" / "results.json"
DOC = ROOT / "docs" / "benchmarks.md"


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI sizes; prints only unless --write")
    parser.add_argument(
        "--only",
        default="",
        help=f"comma-separated sections to run: {', '.join(SECTIONS)} (default: all)",
    )
    parser.add_argument("--write", action="store_true", help="with --quick: write the results and the doc anyway")
    parser.add_argument("--no-write", action="store_true", help="print only, even for a full run")
    parser.add_argument(
        "--render",
        action="store_true",
        help="run nothing: render docs/benchmarks.md again from benchmarks/results.json",
    )
    return parser.parse_args(argv)


_OUT = sys.stdout  # the sections' own stdout is swallowed (see run_sections); ours is not


def _say(text: str = "") -> None:
    _OUT.write(text + "\n")
    _OUT.flush()


def run_sections(names: list[str], *, quick: bool, command: str, previous: dict[str, Any]) -> dict[str, Any]:
    """Run the named sections in order; return their results (others come from `previous`)."""
    results: dict[str, Any] = {}
    for name in names:
        started = time.monotonic()
        stamp = Stamp.now(command)
        # Powertools prints EMF lines whenever 100 values of a metric pile up, even with metrics disabled:
        # they would bury the tables, so the sections' stdout goes nowhere.
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="No application metrics to publish")
            results.update(_run_one(name, stamp, quick=quick, previous=previous, results=results))
        if name in results:
            results[name]["elapsed_s"] = round(time.monotonic() - started, 1)
            _say(f"{CONSOLE[name](results[name])}  ({results[name]['elapsed_s']:.0f} s)")
        else:
            _say("[2] cost: needs section 1 (requests); run it first")
    return results


def _run_one(
    name: str, stamp: Stamp, *, quick: bool, previous: dict[str, Any], results: dict[str, Any]
) -> dict[str, Any]:
    if name == "cost":
        section1 = results.get("requests") or previous.get("requests")
        return {} if section1 is None else {name: cost.run(stamp, section1)}
    if name == "capacity":  # a model calibrated with sections 1-3's figures, this run's or the last ones
        return {name: capacity.run(stamp, {**previous, **results}, quick=quick)}
    return {name: MODULES[name].run(stamp, quick=quick)}


MODULES: dict[str, Any] = {
    "requests": calls_per_run,
    "workflows": calls_per_step,
    "durable": calls_per_durable_op,
    "dispatch": dispatch_rate,
    "scaling": idle_scaling,
    "lateness": lateness,
    "fairness": fairness,
    "burst": burst,
    "fanout": fanout,
    "precise": precise,
    "cold": cold_start,
}
CONSOLE: dict[str, Any] = {
    "requests": calls_per_run.console,
    "workflows": calls_per_step.console,
    "durable": calls_per_durable_op.console,
    "cost": cost.console,
    "dispatch": dispatch_rate.console,
    "scaling": idle_scaling.console,
    "lateness": lateness.console,
    "fairness": fairness.console,
    "capacity": capacity.console,
    "burst": burst.console,
    "fanout": fanout.console,
    "precise": precise.console,
    "cold": cold_start.console,
}


def render_doc(results: dict[str, Any], command: str) -> str:
    parts = [
        "# Benchmarks",
        "",
        "<!-- Generated by `make bench` (python -m benchmarks.run) from benchmarks/results.json: edit"
        " benchmarks/*.py, not this file. -->",
        "",
        "Every figure names the command that produced it, the machine (cores) and the date. Timings come from"
        " moto, in-process or as a local server, on a small shared machine: they are noisy and moto's, not AWS's,"
        " so they are quoted as medians of repeated runs and as ratios measured in the same run. Request counts"
        " and capacity units are deterministic and are what AWS would bill.",
        "",
        "Reproduce: `make bench` (about 16 minutes on 2 cores; writes this page), `make bench-quick` (under 4"
        " minutes, prints only; CI runs its request-count checks in `tests/bench/`).",
        "",
    ]
    headline = _headline(results)
    if headline:
        parts += ["## Headline", "", *headline, ""]
    renderers = [
        ("requests", calls_per_run.render),
        ("workflows", lambda result: calls_per_step.render(result, results.get("requests"))),
        ("durable", calls_per_durable_op.render),
        ("cost", cost.render),
        ("dispatch", dispatch_rate.render),
        ("scaling", idle_scaling.render),
        ("lateness", lateness.render),
        ("fairness", fairness.render),
        ("burst", burst.render),
        ("fanout", fanout.render),
        ("precise", precise.render),
        ("cold", cold_start.render),
    ]
    for name, render in renderers:
        if name in results:
            parts += [render(results[name]), ""]
        else:
            parts += [f"## ({name}: not run yet: `python -m benchmarks.run --only {name}`)", ""]
    if "requests" in results and "cost" in results:
        parts += [scale.render(Stamp.now(command), results["requests"], results["cost"], results.get("dispatch")), ""]
    if "capacity" in results:
        parts += [capacity.render(results["capacity"]), ""]
    return "\n".join(parts).rstrip() + "\n"


def _headline(results: dict[str, Any]) -> list[str]:
    out: list[str] = []
    late = results.get("lateness")
    if late and "pending" not in late:
        out.append(
            f"- Start lateness p99: **{late['p99_ms']:.0f} ms** (p50 {late['p50_ms']:.0f} ms, max {late['max_ms']:.0f} ms,"
            f" {late['early']} early starts; {late['jobs']} runs over {late['window_s']:.0f} s, local runtime)."
        )
    elif late:
        out.append("- Start lateness: pending (section 5).")
    req = results.get("requests")
    if req:
        b = req["billable"]["ahead"]
        out.append(
            f"- Per one-shot run: **{b['billable_requests']:.1f} billable requests** ({b['sdk_requests']:.1f} AWS SDK"
            f" calls + API Gateway + Lambda invocations) and **{b['wru']:.1f} DynamoDB WRU** (goals: ≤ 6 SDK"
            f" requests, {'met' if b['sdk_requests'] <= 6 else 'not met'}; ≤ 8 WRU,"
            f" {'met' if b['wru'] <= 8 else 'not met'}; section 1 says what dominates and what"
            " `InlineResultMaxBytes` changes)."
        )
    w = results.get("workflows")
    if w:
        b = w["billable"]
        out.append(
            f"- Per workflow step run (diamond workflows): **{b['billable_requests']:.1f} billable requests** and"
            f" **{b['wru']:.1f} DynamoDB WRU** (section 1b)."
        )
    c = results.get("cost")
    if c:
        pm = c["per_million"]
        out.append(
            f"- Cost per million runs: **${pm['tickwork_total']:.2f}** vs **${pm['scheduler_total']:.2f}** for"
            f" EventBridge Scheduler doing the same work (ratio {pm['ratio']:.2f}); idle ${c['idle']['total']:.2f} a month."
        )
    d = results.get("dispatch")
    if d:
        m = d["median"]
        out.append(
            f"- One tick claims and enqueues {d['jobs']:,} due runs at {m['runs_per_s']:.0f} runs/s in moto;"
            f" its claims and sends run at {m['ratio']:.2f}x moto's raw ceiling for the same requests."
        )
    s = results.get("scaling")
    if s:
        out.append(
            f"- A tick over {s['large']['stored']:,} stored jobs makes {s['large']['requests']} requests, the same as over"
            f" {s['small']['stored']} (100 due in both)."
        )
    return out


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS]
    if unknown:
        _say(f"unknown section(s): {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
        return 2
    command = ("python -m benchmarks.run " + " ".join(argv if argv is not None else sys.argv[1:])).strip()
    if os.environ.get("MAKELEVEL") and not args.only:  # started by make
        command = "make bench-quick" if args.quick else "make bench"
    write = (args.write or not args.quick) and not args.no_write
    previous: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if args.render:
        DOC.write_text(render_doc(previous, previous.get("rendered_by", command)))
        _say(f"rendered {DOC.relative_to(ROOT)} from {RESULTS.relative_to(ROOT)}")
        return 0
    _say(f"Tickwork benchmarks ({'quick' if args.quick else 'full'}): {', '.join(names)}")
    started = time.monotonic()
    results = run_sections(names, quick=args.quick, command=command, previous=previous)
    _say(f"done in {time.monotonic() - started:.0f} s")
    merged = {**previous, **results, "rendered_by": command}
    if write:
        RESULTS.write_text(json.dumps(merged, indent=1, sort_keys=True, default=str) + "\n")
        DOC.write_text(render_doc(merged, command))
        _say(f"wrote {DOC.relative_to(ROOT)} and {RESULTS.relative_to(ROOT)}")
    else:
        _say()
        _say(render_doc(results, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
