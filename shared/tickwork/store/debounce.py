"""Debounce windows (docs/fairness.md, "Debounce"): one item per job and key (pk=JOB#<job id>,
sk=DEBOUNCE#<key's length>#<key>) naming the window's run and its end, and the joins that write a trigger's
payload into that run while it waits.

The window item is the lock: a trigger opens a window only with a conditional put that holds while no window of
the key is open (none, or its end has passed, or it is the one whose run the trigger found closed). A join is one
conditional update of the run: still QUEUED, before its window's end, of this key, and as the joiner read it.

Each write carries its trigger's token (store/conditional.Own), so a write applied whose answer was lost, whose
resend's condition then fails, is read as won, not made again: the window's `opened_by`, and on the run one
attribute per trigger number, `join_<number % JOIN_TOKENS>` (the first trigger's is written with the run). A
collecting window holds at most MAX_COLLECTED_PAYLOADS triggers, so its tokens are all kept; a window of the last
payload keeps the last JOIN_TOKENS.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from tickwork.model.clock import to_ms
from tickwork.model.policies import MAX_COLLECTED_PAYLOADS
from tickwork.model.run import Run
from tickwork.model.states import RunStatus
from tickwork.store.codec import deserialize, expression_values, run_key, serialize
from tickwork.store.conditional import Own, Table
from tickwork.store.reading import read_run

WINDOW_RETENTION = timedelta(days=1)  # a window's item outlives its end by this (the table's TTL)
JOIN_TOKENS = MAX_COLLECTED_PAYLOADS  # the triggers' tokens a run keeps: every one of a collecting window


def trigger_token(number: int, token: str) -> Own:
    """The token the `number`th trigger of a window writes on its run (the first's with the run's creation)."""
    return Own(f"join_{number % JOIN_TOKENS}", token)


def window_key(job_id: str, key: str) -> dict[str, Any]:
    return {"pk": {"S": f"JOB#{job_id}"}, "sk": {"S": f"DEBOUNCE#{len(key)}#{key}"}}


class DebounceWindows:
    """The debounce window items, and the joins of their runs. Takes the shared `Table`; builds no client."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def open(
        self,
        job_id: str,
        key: str,
        *,
        run_id: str,
        ends: datetime,
        collect: bool,
        now: datetime,
        token: str,
        replacing: str | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """A new window of the key, whose run is `run_id`, if none is open (or the open one's run is `replacing`,
        found closed), opened by the trigger of `token`. Returns (opened, the open window's item if not)."""
        own = Own("opened_by", token)
        item = {
            **{k: v["S"] for k, v in window_key(job_id, key).items()},
            "run_id": run_id,
            "ends_ms": to_ms(ends),
            "collect": collect,
            "expires_at": int((ends + WINDOW_RETENTION).timestamp()),
        }
        condition = "attribute_not_exists(pk) OR ends_ms <= :now"
        values = {"now": to_ms(now)}
        if replacing is not None:
            condition += " OR run_id = :replacing"
            values["replacing"] = replacing  # type: ignore[assignment]
        return self._table.put_if(
            serialize(item), condition, None, expression_values(**values), return_old=True, own=own
        )

    def join(
        self,
        run: Run,
        key: str,
        payload: dict[str, Any],
        *,
        now: datetime,
        token: str,
        audit: dict[str, Any] | None = None,
    ) -> tuple[bool, Run | None]:
        """The run carries `payload` and one trigger more (whose token is `token`), if it is still QUEUED before
        its window's end, of this key, and as `run` read it (its trigger count). Returns (joined, the run as it now
        is; None: no run). `audit`: the trigger's audit record's item, in the same transaction (then the joined run
        is read after it, a transaction returning no item)."""
        assert run.debounce is not None
        own = trigger_token(run.debounce.triggers + 1, token)
        args = (
            run_key(run.id),
            "SET payload_json = :payload, #debounce.triggers = :next, #token = :token",
            "#status = :queued AND not_before_ms > :now AND #debounce.#key = :key AND #debounce.triggers = :seen",
            {"#status": "status", "#debounce": "debounce", "#key": "key", "#token": own.attribute},
            expression_values(
                payload=json.dumps(payload, separators=(",", ":"), sort_keys=True),
                next=run.debounce.triggers + 1,
                queued=RunStatus.QUEUED.value,
                now=to_ms(now),
                key=key,
                seen=run.debounce.triggers,
                token=own.value,
            ),
        )
        if audit is None:
            won, attrs = self._table.update_if_returning_new(*args, own=own)
        else:
            won, attrs = self._table.update_if_audited(*args, audit)
            if won:
                attrs = deserialize(
                    self._table.client.get_item(TableName=self._table.name, Key=args[0], ConsistentRead=True)["Item"]
                )
        return won, read_run(attrs) if attrs else None
