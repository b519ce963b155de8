"""The quick soak (benchmarks/soak.py --quick) in `make test`: three nodes on one moto server with production
settings, one SIGKILLed mid-window and restarted, 2% of AWS requests failing, a few hundred runs of every kind
(one-shot, cron, rate, retrying, failing). Nothing is lost, doubled, stuck, wrong or early. `make soak` runs the
full one (5,000+ runs, a kill every 20 s) and writes docs/reliability.md."""

from __future__ import annotations

import json

import pytest

from benchmarks.soak import QUICK, run_soak

pytestmark = pytest.mark.e2e


def test_quick_soak_loses_nothing_doubles_nothing_and_leaves_nothing_stuck() -> None:
    report = run_soak(QUICK)
    print(json.dumps(report, indent=2))
    assert report["kills"] == 1
    assert report["injected_aws_errors"] > 0  # the faults really happened
    assert report["runs"] == report["occurrences"] > 200
    assert {k: report[k] for k in ("lost", "duplicated", "stuck", "wrong", "early_starts")} == dict.fromkeys(
        ("lost", "duplicated", "stuck", "wrong", "early_starts"), 0
    )
    assert report["results_checked"] == report["occurrences"] - QUICK.failing  # every success read back
