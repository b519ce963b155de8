"""Section 8 (burst) at its --quick size, as a test: `tickwork dev` as a subprocess takes small bursts of
one-shots, with and without API reads. Timings are the benchmark's (make bench), never asserted here; what is
asserted holds on any machine: every run starts, none early, and the AWS requests per run stay in budget. It waits
in real time (about 70 s), so it runs in `make test`'s e2e phase, beside the other suites that start runtimes."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.e2e

# Per one-shot run of a burst, every request the local endpoint served (create, claim, send, receive, lease,
# result, completion, and the API reads of the read phase): section 1's per-run calls (about 9.3) plus the
# executors' polls, spread over the burst's runs, plus the archive of each create's audit record (a PutObject and
# an UpdateItem, and a share of a BatchGetItem: docs/security.md "The archive, for Athena"). Measured with the
# archive: 14.8 (CI, clean clone) and 19.2 (a 25-run burst on a loaded machine, where idle polls weigh more).
REQUESTS_PER_RUN_BUDGET = 20.0
READS_REQUESTS_PER_RUN_BUDGET = 40.0  # 20 reads a second over the burst, each a GetItem or a Query


@pytest.fixture(scope="module")
def section8() -> dict[str, Any]:
    from benchmarks import burst
    from benchmarks.common import Stamp

    available, reason = burst.runtime_available()
    if not available:
        pytest.skip(reason)
    return burst.run(Stamp.now("pytest tests/e2e"), quick=True)


def test_every_run_of_every_burst_starts_and_none_early(section8: dict[str, Any]) -> None:
    bursts = section8["bursts"]
    assert {(b["name"], b["reads"]) for b in bursts} == {
        ("spread", False),
        ("spread", True),
        ("same_second", False),
        ("same_second", True),
    }
    for b in bursts:
        assert (b["started"], b["early"]) == (b["jobs"], 0), b


def test_a_burst_run_costs_no_more_requests_than_budgeted(section8: dict[str, Any]) -> None:
    for b in section8["bursts"]:
        budget = READS_REQUESTS_PER_RUN_BUDGET if b["reads"] else REQUESTS_PER_RUN_BUDGET
        assert 0 < b["requests_per_run"] <= budget, b["requests"]
        assert b["requests"].get("dynamodb:Scan", 0) == 0  # never scan a table


def test_the_api_reads_were_answered_while_the_burst_ran(section8: dict[str, Any]) -> None:
    for b in section8["bursts"]:
        if b["reads"]:
            assert b["reads_done"] > 0
            assert b["read_errors"] == 0
