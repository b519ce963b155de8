"""Before a burst: the tick counts the runs due in each coming second from the entries it has just read (no
request of its own), plans the warm-up (tickwork.model.warmup.plan_warmup) and asks for it: warming invocations
of the executor and the table's warm throughput (tickwork.aws.warmup). A warm-up that fails is logged and
counted (WarmupFailures), never the tick's failure: the burst then starts cold, as it would have.

Requests per tick: none without a burst; with one, an asynchronous Invoke per environment to warm (at most the
executor's concurrency, none for environments warmed within the last five minutes), and, when the burst's
writes pass what the table is known to be warm for, one DescribeTable (once per tick execution environment) and
one UpdateTable."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from tickwork.aws.warmup import ExecutorWarming, TableWarmth
from tickwork.model.ids import ItemKind
from tickwork.model.warmup import WarmCapacity, WarmupPlan, WarmupPolicy, plan_warmup, runs_per_second
from tickwork.observability import logger, metrics
from tickwork.store import DueItem

# Fanned out, the dispatch worker whose slice holds this shard warms the table (tickwork.tick.dispatch's too).
TABLE_WARMING_SHARD = 0


class BurstWarmup:
    """The tick's warm-ups; remembers, for its execution environment, what it warmed and what the table holds."""

    def __init__(
        self,
        policy: WarmupPolicy,
        executor: ExecutorWarming | None = None,
        table: TableWarmth | None = None,
    ) -> None:
        # A warm-up without its client (no executor function named) is not planned.
        usable = {"executor": policy.executor and executor is not None, "table": policy.table and table is not None}
        self.policy = policy.model_copy(update=usable)
        self.executor, self.table = executor, table
        self._warmed: list[tuple[datetime, int]] = []  # (when, environments) warming invocations were accepted
        self._table_write_units: int | None = None  # as last read or set; None: not read yet

    def before_burst(
        self, items: Sequence[DueItem], now: datetime, shards: Sequence[int] | None = None, of_shards: int = 1
    ) -> int:
        """Warm what the busiest second among `items` (due index entries read this tick) needs; the environments
        it warmed. Fanned out, `items` are those of `shards` (of `of_shards`): the slice warms for its share, and
        the table only if it holds shard 0 (one slice a tick). Never raises: the executor's and the table's
        warm-ups fail each on its own."""
        share = 1.0 if shards is None else len(shards) / max(1, of_shards)
        table = shards is None or TABLE_WARMING_SHARD in shards
        return self.warm(items, now, self.policy.for_share(share, table=table)).environments

    def warm(self, items: Sequence[DueItem], now: datetime, policy: WarmupPolicy) -> WarmupPlan:
        """`before_burst` under `policy`: what was planned."""
        if not policy.enabled:
            return WarmupPlan()
        due = (i.due_at for i in items if i.kind is not ItemKind.DEADLINE)
        upcoming = runs_per_second(due, now + policy.min_lead)
        plan = plan_warmup(upcoming, self._capacity(now, policy), policy)
        if not plan.anything:
            return plan
        logger.info(
            "warming up for a burst",
            extra={
                "burst_at": plan.burst_at.isoformat() if plan.burst_at else None,
                "burst_runs": plan.burst_runs,
                "environments": plan.environments,
                "table_write_units": plan.table_write_units,
            },
        )
        if plan.environments:
            self._failing_alone("executor", lambda: self._warm_executor(plan.environments, now))
        if plan.table_write_units is not None:
            self._failing_alone("table", lambda: self._warm_table(upcoming, now, policy))
        return plan

    @staticmethod
    def _failing_alone(what: str, warm: Callable[[], None]) -> None:
        try:
            warm()
        except Exception:
            logger.exception("warm-up failed; the burst starts cold", extra={"warming": what})
            metrics.add_metric(name="WarmupFailures", unit="Count", value=1)

    def _capacity(self, now: datetime, policy: WarmupPolicy) -> WarmCapacity:
        self._warmed = [(at, n) for at, n in self._warmed if now - at < policy.keep_warm]
        table = self._table_write_units
        return WarmCapacity(
            environments=sum(n for _, n in self._warmed),
            **({"table_write_units": table} if table is not None else {}),
        )

    def _warm_executor(self, environments: int, now: datetime) -> None:
        assert self.executor is not None
        accepted = self.executor.warm(environments)
        self._warmed.append((now, accepted))
        metrics.add_metric(name="WarmupInvocations", unit="Count", value=accepted)
        if accepted < environments:
            logger.warning("some warming invocations were refused", extra={"sent": environments, "accepted": accepted})
            metrics.add_metric(name="WarmupFailures", unit="Count", value=environments - accepted)

    def _warm_table(self, upcoming: Mapping[int, int], now: datetime, policy: WarmupPolicy) -> None:
        assert self.table is not None
        if self._table_write_units is None:  # read once; then what this tick set is what the table holds
            self._table_write_units = self.table.write_units()
        write_units = plan_warmup(upcoming, self._capacity(now, policy), policy).table_write_units
        if write_units is None:  # warm enough already
            return
        self.table.raise_write_units(write_units)
        self._table_write_units = write_units
        metrics.add_metric(name="TableWarmThroughputRaised", unit="Count", value=1)
        metrics.add_metric(name="TableWarmWriteUnits", unit="Count", value=write_units)
