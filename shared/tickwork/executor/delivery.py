"""One delivered run message, and what becomes of it: acknowledged, or back on the queue later."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from tickwork.model.policies import Band

VISIBILITY_MARGIN_SECONDS = 15  # a message comes back this long after its run's lease has ended


class Outcome(StrEnum):
    DONE = "DONE"  # acknowledge: the message is deleted
    RETRY_LATER = "RETRY_LATER"  # report the item failed: SQS redelivers after the backoff
    BUSY = "BUSY"  # another executor holds the lease: redeliver when it expires


@dataclass(frozen=True)
class Delivery:
    """One SQS message as the executor received it."""

    body: str
    message_id: str
    receipt_handle: str
    queue_url: str
    band: Band | None = None
    receive_count: int = 1
    # Its visibility was already set to follow its lease, with its batch's (RunExecutor.hold_batch).
    held: bool = False


def visibility_for(lease_for: timedelta) -> int:
    return int(lease_for.total_seconds()) + VISIBILITY_MARGIN_SECONDS
