"""Whether a handover's target has every write of the old active region (docs/regions.md, section 6; RegionMode
eventual, an MREC global table): the `ReplicationProbe` a failover asks on AWS (and in `tickwork dev`, whose
regions' endpoints stand for theirs).

Two reads in the old active region, through its own clients (built on first use): the region-role item in its
replica (one consistent GetItem), which shows whether its nodes have seen the handover and so stop at their next
fence read; and CloudWatch's `ReplicationLatency` from it to the target (its latest minute's Maximum over the last 5
minutes, as tickwork.control.replication_lag reads it). tickwork.model.regions.replication_caught_up decides from
them. When this environment first saw the handover in the old replica is kept here: the old region saw it then or
earlier, so a wait counted from it is never too short (another environment counts from its own first sight, later).

An old region that does not answer cannot tell: the failover needs `force`, and the reason says why.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from botocore.exceptions import BotoCoreError, ClientError

from tickwork.control.replication_lag import METRIC, WINDOW, SeriesReader, latency_queries, slowest_latest
from tickwork.model.clock import Clock
from tickwork.model.regions import RegionRoles, Replication, replication_caught_up
from tickwork.observability import logger
from tickwork.store.regions import RegionRoleRecords

_UNREACHABLE = (ClientError, BotoCoreError)


class GlobalTableProbe:
    def __init__(
        self,
        roles_in: Callable[[str], RegionRoleRecords],
        series_in: Callable[[str], SeriesReader],
        clock: Clock,
        *,
        table: str,
    ) -> None:
        self.roles_in, self.series_in, self.clock, self.table = roles_in, series_in, clock, table
        self._first_seen: dict[int, datetime] = {}  # by the handover's epoch

    def caught_up(self, handover: RegionRoles) -> Replication:
        old, to = handover.handing_over_from, handover.handing_over_to
        if old is None or to is None:
            return Replication(None, "not a handover")
        try:
            seen = self.roles_in(old).roles()
        except _UNREACHABLE as exc:
            return self._cannot_tell(old, "DynamoDB", exc)
        now = self.clock.now()
        if seen is not None and seen.epoch >= handover.epoch:
            self._first_seen.setdefault(handover.epoch, now)
        try:
            latency = slowest_latest(self.series_in(old).read(latency_queries(self.table, [to]), now - WINDOW, now))
        except _UNREACHABLE as exc:
            return self._cannot_tell(old, f"CloudWatch's {METRIC}", exc)
        return replication_caught_up(handover, seen, self._first_seen.get(handover.epoch), latency, now)

    @staticmethod
    def _cannot_tell(old: str, what: str, exc: Exception) -> Replication:
        logger.warning(
            "the old active region could not be read", extra={"region": old, "error": f"{type(exc).__name__}: {exc}"}
        )
        return Replication(None, f"the old active region {old} did not answer ({what}: {type(exc).__name__})")
