"""Bursts the tick sees coming (tickwork.tick.warmup) on moto through real boto3 clients: a burst ahead makes the
tick send warming invocations of the executor (played by the local runtime's Invoke, as `tickwork dev` plays it)
and raise the table's warm throughput; no burst makes none; after the burst nothing is held and nothing more is
asked for; a warm-up that fails never fails the tick."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from tickwork_local.runtime.lambda_runtime import FunctionRuntime, function_config
from tickwork_local.runtime.node import EXECUTOR_FUNCTION
from tickwork_local.stack.template import load_template

from tests.harness import START, Pipeline, _process_aws

EXECUTOR_NAME = f"tickwork-{EXECUTOR_FUNCTION}"  # as the local runtime names it (<prefix>-<logical id>)
BURST_AT = START + timedelta(minutes=3)  # beyond the horizon at create: the tick claims it
WARMUPS_ON = {"EXECUTOR_WARMUP": "invocations", "TABLE_WARMUP": "on", "EXECUTOR_FUNCTION_NAME": EXECUTOR_NAME}


@pytest.fixture
def warming(mocked_aws: None) -> Iterator[tuple[Pipeline, FunctionRuntime]]:
    with Pipeline.create(**WARMUPS_ON) as pipeline:
        assert pipeline.resources.table_name.startswith("tickwork-")
        executor = FunctionRuntime(
            function_config(load_template(), EXECUTOR_FUNCTION),
            prepare=lambda module: module.use_services(pipeline.services),
            max_environments=10,
        )
        _process_aws().invokes.serve(EXECUTOR_NAME, executor)
        warmup = pipeline.services.burst_warmup
        assert warmup is not None
        # 60 one-shots: 720 write units; the table part is tried with a run's writes counted heavier.
        warmup.policy = warmup.policy.model_copy(update={"write_units_per_run": 100})
        yield pipeline, executor


def _one_shots(pipeline: Pipeline, instants: list[Any]) -> None:
    for at in instants:
        pipeline.create_job(schedule={"at": at.isoformat()})


def _calls(pipeline: Pipeline, service: str, operation: str) -> list[dict[str, Any]]:
    return [params for s, op, params in pipeline.calls.calls if (s, op) == (service, operation)]


def _table_warm_write_units(pipeline: Pipeline) -> int | None:
    db = pipeline.services.clients.client("dynamodb")
    table = db.describe_table(TableName=pipeline.resources.table_name)["Table"]
    return table.get("WarmThroughput", {}).get("WriteUnitsPerSecond")


def test_a_burst_ahead_warms_the_executor_and_the_table_and_then_nothing_more(
    warming: tuple[Pipeline, FunctionRuntime],
) -> None:
    pipeline, executor = warming
    _one_shots(pipeline, [BURST_AT] * 60)
    before = _table_warm_write_units(pipeline)
    pipeline.clock.set(BURST_AT - timedelta(seconds=90))
    pipeline.calls.clear()

    result = pipeline.tick()

    assert result["dispatched"] == 60  # claimed ahead and sent as ever
    invokes = _calls(pipeline, "lambda", "Invoke")
    assert len(invokes) == 6  # one environment per batch of ten runs
    assert {(i["FunctionName"], i["InvocationType"]) for i in invokes} == {(EXECUTOR_NAME, "Event")}
    assert json.loads(invokes[0]["Payload"]) == {"tickwork_warm": {"hold_ms": 500}}
    assert _process_aws().invokes.settle()
    assert executor.environments >= 1  # the executor's handler answered them: environments made, nothing run
    assert [c["WarmThroughput"] for c in _calls(pipeline, "dynamodb", "UpdateTable")] == [{"WriteUnitsPerSecond": 6000}]
    assert (before, _table_warm_write_units(pipeline)) == (4000, 6000)

    # The next ticks, the burst's runs sent: nothing held to release, nothing asked for again.
    pipeline.calls.clear()
    pipeline.clock.set(BURST_AT + timedelta(seconds=30))
    pipeline.tick()
    assert _calls(pipeline, "lambda", "Invoke") == []
    assert _calls(pipeline, "dynamodb", "UpdateTable") == _calls(pipeline, "dynamodb", "DescribeTable") == []


def test_no_burst_makes_no_warm_up(warming: tuple[Pipeline, FunctionRuntime]) -> None:
    pipeline, executor = warming
    _one_shots(pipeline, [BURST_AT + timedelta(seconds=i % 5) for i in range(60)])  # 12 a second: no burst
    pipeline.clock.set(BURST_AT - timedelta(seconds=90))
    pipeline.calls.clear()

    assert pipeline.tick()["dispatched"] == 60
    assert _calls(pipeline, "lambda", "Invoke") == []
    assert _calls(pipeline, "dynamodb", "DescribeTable") == _calls(pipeline, "dynamodb", "UpdateTable") == []
    assert executor.environments == 0


def test_warm_ups_that_fail_never_fail_the_tick(warming: tuple[Pipeline, FunctionRuntime]) -> None:
    pipeline, _ = warming
    _process_aws().invokes.withdraw_all()  # the Invoke goes on to moto, which knows no such function
    _one_shots(pipeline, [BURST_AT] * 60)
    pipeline.clock.set(BURST_AT - timedelta(seconds=90))
    pipeline.calls.clear()

    assert pipeline.tick()["dispatched"] == 60
    assert len(_calls(pipeline, "lambda", "Invoke")) == 6  # tried, refused
    assert _table_warm_write_units(pipeline) == 6000  # the table's warm-up failed not with the executor's


def test_the_executor_answers_a_warming_invocation_and_runs_nothing(pipeline: Pipeline) -> None:
    from executor import app as executor_app
    from tickwork_local.runtime.lambda_runtime import LocalLambdaContext

    pipeline.calls.clear()
    answer = executor_app.handler({"tickwork_warm": {"hold_ms": 200}}, LocalLambdaContext("ExecutorFunction"))
    assert answer == {"warmed": True}
    assert pipeline.calls.calls == []  # nothing received, leased or written
    assert pipeline.clock.now() == START + timedelta(milliseconds=200)  # it held its environment, on the clock
