"""What a claim folds into its job's forecast (tickwork.model.forecasts): the job's runs scheduled since the fold's
cursor, up to now, read in scheduled order by one Query of the job's own partition (its runs sort under it by
their scheduled instant), at most FOLD_LIMIT of them. Eventually consistent (half the read units): a run whose end
the read misses is read again by the next claim, since the fold stops at the first run it does not see settled.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.model.forecasts import BASELINE, FOLD_LIMIT, EndedRun
from tickwork.model.states import RunStatus
from tickwork.store.codec import deserialize, expression_values
from tickwork.store.conditional import Table

# A sort key just past `RUN#<ms>` and any `RUN#<ms>#m` (a manual run's at the same instant): `~` sorts after `#`.
_PAST = "~"
_OUTCOMES = {RunStatus.SUCCEEDED.value: True, RunStatus.FAILED.value: False}
_TERMINAL = {RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.SKIPPED.value}


class EndedRuns:
    def __init__(self, table: Table) -> None:
        self._table = table

    def since(self, job_id: str, through: str, now: datetime) -> list[EndedRun]:
        """The job's runs after the sort key `through` ("": from its first), scheduled by `now`, oldest first."""
        start = f"{through}{_PAST}" if through else "RUN#"
        page = self._table.client.query(
            TableName=self._table.name,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :start AND :end",
            ProjectionExpression="sk, #status, duration_ms, variant",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=expression_values(
                pk=f"JOB#{job_id}", start=start, end=f"RUN#{to_ms(now):013d}{_PAST}"
            ),
            Limit=FOLD_LIMIT,
        )
        return [ended_run(deserialize(item)) for item in page.get("Items", [])]


def ended_run(attrs: dict[str, Any]) -> EndedRun:
    """A run as the fold reads it (its projected attributes)."""
    status = str(attrs.get("status", ""))
    duration = attrs.get("duration_ms")
    return EndedRun(
        sort_key=str(attrs["sk"]),
        settled=status in _TERMINAL,
        succeeded=_OUTCOMES.get(status),
        duration_ms=float(duration) if duration is not None else None,
        variant=str(attrs.get("variant") or BASELINE),
    )
