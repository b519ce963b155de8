"""A segment's budget (tickwork.executor.yields.segment_budget), no AWS: which bound ends it, when the handler is told
to yield, and the margins a Lambda of each timeout leaves."""

from __future__ import annotations

import pytest
from tickwork.executor.yields import LambdaMargins, segment_budget
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
    assert budget.yield_after == max(lambda_left - 30, 0)


def test_the_yield_margin_is_the_one_given():
    assert segment_budget(840, 8, 86_400, yield_margin=2).yield_after == 6


@pytest.mark.parametrize(
    ("lambda_timeout", "recording", "yielding"),
    [
        (900, 15, 30),  # the default Lambda: the margins as they always were
        (150, 15, 30),  # every timeout from 150 s up has them
        (60, 6, 12),
        (10, 1, 2),  # the shortest: most of it is still the handler's
    ],
)
def test_the_margins_follow_the_lambdas_timeout(lambda_timeout, recording, yielding):
    assert LambdaMargins.for_timeout(lambda_timeout) == LambdaMargins(recording=recording, yielding=yielding)
    assert LambdaMargins.for_timeout(900) == LambdaMargins()


def test_only_a_handler_stopped_at_the_lambdas_bound_after_a_checkpoint_is_yielded_on_its_own():
    by_lambda = segment_budget(840, 45, 86_400)
    assert by_lambda.yields_on_its_own(TIMED_OUT, checkpoints_saved=1, cancel_requested=False)
    assert not by_lambda.yields_on_its_own(TIMED_OUT, checkpoints_saved=0, cancel_requested=False)
    assert not by_lambda.yields_on_its_own(TIMED_OUT, checkpoints_saved=1, cancel_requested=True)
    assert not by_lambda.yields_on_its_own(RunError(type="ValueError", message="x"), 1, cancel_requested=False)
    assert not by_lambda.yields_on_its_own(None, checkpoints_saved=1, cancel_requested=False)
    assert not segment_budget(300, 885, 86_400).yields_on_its_own(TIMED_OUT, 1, cancel_requested=False)
