"""A segment's budget (tickwork.executor.yields.segment_budget), no AWS: which bound ends it, and when the handler
is told to yield."""

from __future__ import annotations

import pytest
from tickwork.executor.yields import segment_budget
from tickwork.jobtypes.durable import YIELD_MARGIN_SECONDS
from tickwork.model.run import RunError

TIMED_OUT = RunError(type="RunTimeout", message="run cancelled")


@pytest.mark.parametrize(
    ("timeout", "lambda_left", "run_left", "seconds", "by_lambda", "by_run_total"),
    [
        (300, 885, 86_400, 300, False, False),  # the job's timeout: a failure, retried
        (840, 45, 86_400, 45, True, False),  # the Lambda's time: a checkpointed handler is yielded
        (840, 45, 20, 20, False, True),  # what is left of max_run_seconds: a failure, for good
        (840, 45, 45, 45, True, False),  # a tie goes to the Lambda: the yield then fails it on max_run_seconds
    ],
)
def test_the_tightest_bound_ends_the_segment(timeout, lambda_left, run_left, seconds, by_lambda, by_run_total):
    budget = segment_budget(timeout, lambda_left, run_left)
    assert (budget.seconds, budget.by_lambda, budget.by_run_total) == (seconds, by_lambda, by_run_total)
    assert budget.yield_after == max(lambda_left - YIELD_MARGIN_SECONDS, 0)


def test_only_a_handler_stopped_at_the_lambdas_bound_after_a_checkpoint_is_yielded_on_its_own():
    by_lambda = segment_budget(840, 45, 86_400)
    assert by_lambda.yields_on_its_own(TIMED_OUT, checkpoints_saved=1, cancel_requested=False)
    assert not by_lambda.yields_on_its_own(TIMED_OUT, checkpoints_saved=0, cancel_requested=False)
    assert not by_lambda.yields_on_its_own(TIMED_OUT, checkpoints_saved=1, cancel_requested=True)
    assert not by_lambda.yields_on_its_own(RunError(type="ValueError", message="x"), 1, cancel_requested=False)
    assert not by_lambda.yields_on_its_own(None, checkpoints_saved=1, cancel_requested=False)
    assert not segment_budget(300, 885, 86_400).yields_on_its_own(TIMED_OUT, 1, cancel_requested=False)
