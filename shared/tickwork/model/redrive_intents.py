"""A dead letters' redrive's audit record, and how one left pending is settled (docs/security.md "Audit trail").

The redrive (SQS's message move task) writes nothing to the table, so its record cannot share a transaction with
it: the API writes the record as pending first (an intent: the record naming the bands it is about to move), starts
the moves, then confirms the record naming the bands whose move started. A request that dies in between leaves the
intent pending; once the request has surely ended (SETTLES_AFTER), the tick settles it from what SQS lists: the
bands whose move task started within the request's time (`started_within`), or none, and then the intent is
marked as not happened (never listed, never archived). Pure: the times SQS lists are given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from tickwork.model.audit import AuditRecord, AuditResource, Change
from tickwork.model.policies import Band

REDRIVE_ACTION = "dead_letters.redrive"
# A request starts its moves within the API function's timeout (template.yaml ApiFunction, 10 s) after its intent.
REQUEST_BOUND = timedelta(seconds=10)
# Between the API function's clock (the intent's `at`) and SQS's (a task's StartedTimestamp).
CLOCK_SKEW = timedelta(seconds=2)
# An intent is settled by the tick only once its request has ended and SQS lists what it started.
SETTLES_AFTER = timedelta(seconds=30)


def redrive_shown(bands: Iterable[Band]) -> tuple[AuditResource, dict[str, Change]]:
    """A redrive record's resource and changes: the bands it names (an intent's, to move; a confirmed one's,
    started)."""
    names = [band.value for band in bands]
    return AuditResource(kind="dlq", id=",".join(names)), {"started": Change(after=names)}


def intended_bands(intent: AuditRecord) -> list[Band]:
    """The bands an intent's request was about to move."""
    return [Band(name) for name in intent.changes["started"].after]


def started_within(intent: AuditRecord, started: Mapping[Band, Iterable[datetime]]) -> list[Band]:
    """The bands, of those the intent names, whose move task SQS shows started within its request: from its `at`
    to REQUEST_BOUND later, each end widened by CLOCK_SKEW. `started`: each band's tasks' start times, as listed."""
    low, high = intent.at - CLOCK_SKEW, intent.at + REQUEST_BOUND + CLOCK_SKEW
    return [band for band in intended_bands(intent) if any(low <= at <= high for at in started.get(band, ()))]


def settled(intent: AuditRecord, started: list[Band]) -> AuditRecord | None:
    """The record an intent becomes: naming the bands whose move started (its id, time and actor kept), or None
    when none did (the intent is marked not happened: a change that did not happen has no record)."""
    if not started:
        return None
    resource, changes = redrive_shown(started)
    return intent.model_copy(update={"resource": resource, "changes": changes})
