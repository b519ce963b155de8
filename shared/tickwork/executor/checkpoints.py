"""Saving a run's checkpoint for its handler (tickwork.jobtypes.durable), fenced by the lease this executor holds.

A save is durable before `ctx.checkpoint` returns: a document of at most INLINE_CHECKPOINT_MAX_BYTES goes into the
run item, a larger one to S3 first (a key of its own per save and writer) and then the item points to it. Either
way the item's conditional write (tickwork.store.checkpoints) is the fence: an executor that lost its lease saves
nothing, is told so (LeaseLost), and stops as at its timeout; an object it wrote to S3 is never pointed to.

S3 objects do not pile up: once the item points to a newer checkpoint, the object the previous one was in is
deleted (one DeleteObject, only when that one was in S3), and so is an object the fence refused. No reader needs
it by then: this attempt read it before its first save, and a later attempt reads what the item points to. A
delete that fails (or an executor that dies between the two writes) leaves the object to the results bucket's
lifecycle rule (ResultsRetentionDays).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from tickwork.aws.results import ResultStore, checkpoint_key
from tickwork.jobtypes import LeaseLost
from tickwork.jobtypes.durable import INLINE_CHECKPOINT_MAX_BYTES
from tickwork.model.clock import Clock
from tickwork.model.run import Run
from tickwork.observability import logger
from tickwork.store.checkpoints import CheckpointRecords, StoredCheckpoint


class LeasedCheckpoints:
    """One attempt's checkpoint writer (a tickwork.jobtypes.durable.CheckpointWriter): it starts from what the lease
    found (`stored`) and numbers its saves on from it."""

    def __init__(
        self,
        records: CheckpointRecords,
        results: ResultStore,
        clock: Clock,
        *,
        run: Run,
        owner: str,
        stored: StoredCheckpoint | None,
        on_lost: Callable[[], None],
    ) -> None:
        self.records, self.results, self.clock = records, results, clock
        self.run, self.owner, self.stored = run, owner, stored
        self.seq = stored.seq if stored is not None else 0
        self.object_key = stored.key if stored is not None else None  # where the item's checkpoint is in S3, if it is
        self.on_lost = on_lost  # the heartbeat learns the lease is gone, and the handler is cancelled
        self._lock = threading.Lock()

    def load(self) -> dict[str, Any] | None:
        stored = self.stored
        if stored is None:
            return None
        if stored.json is not None:
            return json.loads(stored.json)  # type: ignore[no-any-return]
        if stored.key is not None:
            return self.results.read_checkpoint(stored.key)  # type: ignore[no-any-return]
        return None  # removed by a retry that starts over

    def save(self, body: bytes) -> None:
        with self._lock:
            seq = self.seq + 1
            now = self.clock.now()
            if len(body) <= INLINE_CHECKPOINT_MAX_BYTES:
                saved = self.records.save(
                    self.run.id, owner=self.owner, seq=seq, now=now, size=len(body), inline=body.decode()
                )
                key = None
            else:
                key = checkpoint_key(self.run, seq, self.owner)
                self.results.write_checkpoint(key, body)
                saved = self.records.save(self.run.id, owner=self.owner, seq=seq, now=now, size=len(body), key=key)
            if not saved:
                logger.error("checkpoint refused: the lease is another executor's now", extra={"run_id": self.run.id})
                self._delete(key)
                self.on_lost()
                raise LeaseLost("checkpoint not saved: this attempt lost the run's lease to another executor")
            superseded, self.seq, self.object_key = self.object_key, seq, key
            self._delete(superseded)

    def _delete(self, key: str | None) -> None:
        """An object no item points to; a failure is left to the bucket's lifecycle rule, never to the handler."""
        if key is None:
            return
        try:
            self.results.delete_checkpoint(key)
        except Exception:
            logger.exception("checkpoint object not deleted", extra={"run_id": self.run.id, "key": key})
