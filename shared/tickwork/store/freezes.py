"""Freeze items, every tenant's in one partition (pk=FREEZES, sk=FREEZE#<id>): a tick reads them all with one
Query, whatever the number of tenants and jobs. An item stays a day past its end (TTL `expires_at`), so that a
tick late after it ended still finds what deferred a job's occurrences to its end. And the runs a new freeze
marks: claimed (QUEUED) before it existed, looked at again by their executor (tickwork.executor.freeze_gate)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import iso
from tickwork.model.freezes import Freeze
from tickwork.model.states import DeferReason, RunStatus
from tickwork.store.codec import deserialize, expression_values, run_key, serialize
from tickwork.store.conditional import Table

FREEZES_PK = "FREEZES"
FREEZE_PREFIX = "FREEZE#"
KEPT_AFTER_END = timedelta(days=1)


def freeze_key(freeze_id: str) -> dict[str, Any]:
    return {"pk": {"S": FREEZES_PK}, "sk": {"S": FREEZE_PREFIX + freeze_id}}


def _expiry(freeze: Freeze) -> int:
    return int((freeze.ends_at + KEPT_AFTER_END).timestamp())


def _freeze(attrs: dict[str, Any]) -> Freeze:
    return Freeze.model_validate({k: v for k, v in attrs.items() if k not in ("pk", "sk", "expires_at")})


class FreezeRecords:
    """The freeze items of the table. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def put_new(self, freeze: Freeze) -> bool:
        attrs = {"pk": FREEZES_PK, "sk": FREEZE_PREFIX + freeze.id, **freeze.model_dump(mode="json")}
        won, _ = self._table.put_if_absent(serialize({**attrs, "expires_at": _expiry(freeze)}), return_old=False)
        return won

    def get(self, freeze_id: str) -> Freeze | None:
        item = self._table.client.get_item(
            TableName=self._table.name, Key=freeze_key(freeze_id), ConsistentRead=True
        ).get("Item")
        return _freeze(deserialize(item)) if item else None

    def lift(self, freeze: Freeze, now: datetime) -> bool:
        """Ends it now, once, if it has not ended: False when it was lifted already or is over."""
        lifted = freeze.model_copy(update={"lifted_at": now})
        return self._table.update_if(
            freeze_key(freeze.id),
            "SET lifted_at = :now, expires_at = :exp",
            "attribute_exists(pk) AND attribute_not_exists(lifted_at) AND #until > :now",
            {"#until": "until"},
            expression_values(now=iso(now), exp=_expiry(lifted)),
        )

    def all(self) -> list[Freeze]:
        """Every freeze still kept (ended less than a day ago, or to come): one Query per 1 MB."""
        return [_freeze(a) for a in self._table.query_all("pk = :pk", {":pk": FREEZES_PK})]

    def mark_claimed(self, run_id: str, freeze: Freeze, *, keep: bool) -> bool:
        """A run claimed before the freeze, still QUEUED (no executor has leased it): marked `blocked_by` the
        freeze, so that its executor looks at the freeze when it would start (tickwork.executor.freeze_gate);
        `keep` (DEFER, within the job's catch-up) marks it to wait for the freeze's end rather than be skipped."""
        sets = "SET blocked_by = :by" + (", deferred_reason = :why" if keep else "")
        values = {"by": freeze.id, "queued": RunStatus.QUEUED.value}
        if keep:
            values["why"] = DeferReason.FREEZE.value
        return self._table.update_if(
            run_key(run_id), sets, "#status = :queued", {"#status": "status"}, expression_values(**values)
        )


def is_freeze_id(value: str) -> bool:
    return len(value) == 26 and value.startswith("f")
