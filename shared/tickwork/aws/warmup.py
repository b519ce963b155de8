"""Lambda and DynamoDB data access for the tick's warm-ups before a burst (tickwork.tick.warmup): warming
invocations of the executor, and the table's warm throughput. Takes its clients; builds none."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tickwork.model.warmup import WarmEvent, WarmRequest

WARM_THREADS = 8  # invocations sent at once: each is one short request (InvocationType Event)
ACCEPTED = 202  # Lambda queued the asynchronous invocation


class ExecutorWarming:
    """Warming invocations of the executor function: asynchronous (the tick does not wait for them), each a
    `WarmEvent` the handler answers by initialising its execution environment and running nothing."""

    def __init__(self, client: Callable[[], Any], function_name: str) -> None:
        self._lambda = client
        self.function_name = function_name

    def warm(self, environments: int, request: WarmRequest | None = None) -> int:
        """Send `environments` warming invocations; how many Lambda accepted. An invocation refused is not
        retried: the burst finds one environment fewer warm, and starts it cold as it would have."""
        if environments <= 0:
            return 0
        payload = WarmEvent(tickwork_warm=request or WarmRequest()).model_dump_json().encode()
        client = self._lambda()

        def invoke(_: int) -> bool | Exception:
            # Each invocation on its own: one refused (throttled, say) leaves the others tried.
            try:
                answer = client.invoke(FunctionName=self.function_name, InvocationType="Event", Payload=payload)
            except Exception as exc:  # said below, once every invocation has been tried
                return exc
            return int(answer.get("StatusCode", 0)) == ACCEPTED

        with ThreadPoolExecutor(max_workers=min(WARM_THREADS, environments), thread_name_prefix="warm") as pool:
            answers = list(pool.map(invoke, range(environments)))
        accepted = sum(answer is True for answer in answers)
        failures = [answer for answer in answers if isinstance(answer, Exception)]
        if failures and not accepted:
            raise failures[0]  # none warmed: the caller logs and counts it
        return accepted


class TableWarmth:
    """The table's warm throughput (on-demand): what it sustains without throttling, and raising it ahead."""

    def __init__(self, client: Any, table_name: str) -> None:
        self._dynamodb = client
        self.table_name = table_name

    def write_units(self) -> int:
        """The write units a second the table is warm for (DescribeTable)."""
        table = self._dynamodb.describe_table(TableName=self.table_name)["Table"]
        return int(table.get("WarmThroughput", {}).get("WriteUnitsPerSecond", 0))

    def raise_write_units(self, write_units: int) -> None:
        """Pre-warm the table for `write_units` write units a second (UpdateTable WarmThroughput); warm
        throughput is never lowered, so there is nothing to release after the burst."""
        self._dynamodb.update_table(TableName=self.table_name, WarmThroughput={"WriteUnitsPerSecond": write_units})
