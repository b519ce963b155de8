"""Run checkpoints in the run item: the handler's last saved state (tickwork.jobtypes.durable), or where in S3 it is.

Attributes on the run item (pk=JOB#<job>, sk=RUN#...): `checkpoint_seq` (how many checkpoints the run has saved, over
all its attempts), `checkpoint_at`, `checkpoint_bytes`, and either `checkpoint_json` (the document, kept inline) or
`checkpoint_key` (the S3 key of a larger one). A save is one conditional UpdateItem whose condition is the fence: the
writer holds the lease (`lease_owner = :owner AND status = RUNNING`) and its sequence number is newer than the
stored one, so an executor whose lease was taken over can never overwrite what the new holder saved. The lease's
own update returns the item as it was (ALL_OLD), so the next attempt reads its checkpoint at no extra request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tickwork.model.clock import iso
from tickwork.model.states import RunStatus
from tickwork.store.codec import expression_values, run_key
from tickwork.store.conditional import Table

# What a retry that starts over (`from_checkpoint: false`) removes; the sequence number stays, so it only grows.
CHECKPOINT_CONTENT = ("checkpoint_json", "checkpoint_key", "checkpoint_bytes", "checkpoint_at")


@dataclass(frozen=True)
class StoredCheckpoint:
    """A run's last checkpoint as its item holds it: the document inline (`json`) or its S3 key (`key`)."""

    seq: int
    json: str | None = None
    key: str | None = None


def stored_checkpoint(attrs: Mapping[str, Any]) -> StoredCheckpoint | None:
    """The checkpoint a run item holds, from its attributes (None: none saved, or removed by a retry starting
    over); the sequence number alone is kept as `seq` with no content, so the next save still outnumbers it."""
    if "checkpoint_seq" not in attrs:
        return None
    json_text, key = attrs.get("checkpoint_json"), attrs.get("checkpoint_key")
    return StoredCheckpoint(int(attrs["checkpoint_seq"]), json_text, key)


class CheckpointRecords:
    """The checkpoint's one write, over the table's shared `Table`."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def save(
        self,
        run_id: str,
        *,
        owner: str,
        seq: int,
        now: datetime,
        size: int,
        inline: str | None = None,
        key: str | None = None,
    ) -> bool:
        """Record checkpoint number `seq` (the document `inline`, or the S3 `key` it was written to), only while
        `owner` holds the run's lease and `seq` is newer than the stored one. False: the lease is another's (or the
        run ended), and nothing changed."""
        sets = ["checkpoint_seq = :seq", "checkpoint_at = :at", "checkpoint_bytes = :bytes"]
        values: dict[str, Any] = {"seq": seq, "at": iso(now), "bytes": size, "owner": owner}
        values["running"] = RunStatus.RUNNING.value
        if inline is not None:
            sets.append("checkpoint_json = :doc")
            values["doc"] = inline
            remove = "checkpoint_key"
        else:
            sets.append("checkpoint_key = :key")
            values["key"] = key
            remove = "checkpoint_json"
        return self._table.update_if(
            run_key(run_id),
            f"SET {', '.join(sets)} REMOVE {remove}",
            "lease_owner = :owner AND #status = :running "
            "AND (attribute_not_exists(checkpoint_seq) OR checkpoint_seq < :seq)",
            {"#status": "status"},
            expression_values(**values),
        )
