"""S3 data access: run results, written once (first write wins), and beside them each attempt's log
(tickwork.jobtypes.run_log), written once too, and checkpoints too large for the run item (tickwork.store.checkpoints)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from tickwork.model.run import Run, RunResult

INLINE = "inline"  # RunResult.location of a result kept in the run record


def result_key(run: Run) -> str:
    return result_key_of(run.tenant, run.job_id, run.id)


def result_key_of(tenant: str, job_id: str, run_id: str) -> str:
    """Where a run's result lives: `results/<spread>/<tenant>/<job or workflow>/<run>.json`. The spread, two hex
    digits of the run id's SHA-256, puts a burst's writes in 256 key ranges from the start: S3 serves 3,500
    PUT/s per prefix and splits a hot one only over time, and job ids are time-ordered, so without it a tenant's
    new results would all land in one range (docs/scale.md)."""
    return f"results/{_spread(run_id)}/{tenant}/{job_id}/{run_id}.json"


def legacy_result_key_of(tenant: str, job_id: str, run_id: str) -> str:
    """Where results were written before the spread: still read, so a run finished before it is found."""
    return f"results/{tenant}/{job_id}/{run_id}.json"


def _spread(run_id: str) -> str:
    return hashlib.sha256(run_id.encode()).hexdigest()[:2]


def logs_prefix_of(tenant: str, job_id: str, run_id: str) -> str:
    """Where a run's attempts' logs live: beside its result, one object per attempt."""
    return f"logs/{tenant}/{job_id}/{run_id}/"


def logs_key(run: Run) -> str:
    """The key of the current attempt's log. A run retried from the DLQ counts its attempts from 1 again, so the
    key names its requeue too; both padded, so that keys sort in the order the attempts ran."""
    segment = f"-{run.segments:03d}" if run.segments else ""  # a yielded run's later segments, same attempt
    return f"{logs_prefix_of(run.tenant, run.job_id, run.id)}{run.requeues:04d}-{run.attempts:03d}{segment}.json"


LIVE = ".live.json"  # an attempt's log as its heartbeat last flushed it, until the attempt's own log replaces it


def live_logs_key(run: Run) -> str:
    """Where the current attempt's lines go while it runs (tickwork.executor.live_logs): overwritten at each flush,
    read only while the attempt has no log of its own (`logs_key`), as when its executor died."""
    return logs_key(run).removesuffix(".json") + LIVE


def checkpoint_key(run: Run, seq: int, owner: str) -> str:
    """Where a checkpoint too large for the run item lives (tickwork.store.checkpoints): one object per save, named
    by its number and its writer, so an executor whose lease was taken over never overwrites the object the run
    points to."""
    writer = hashlib.sha256(owner.encode()).hexdigest()[:12]
    return f"checkpoints/{run.tenant}/{run.job_id}/{run.id}/{seq:08d}-{writer}.json"


def _missing(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")


def already_written(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412")


class ResultStore:
    """Takes its client; builds none.

    `region`: in a multi-region stack, this bucket's region, which each result written to it names (docs/regions.md,
    "Results"), so that another region's API knows where to read it; None in a single region, where a result names
    none and the run item stays as it was."""

    def __init__(
        self,
        client: Any,
        bucket: str,
        *,
        inline_max_bytes: int = 0,
        region: str | None = None,
        elsewhere: Callable[[], Sequence[ResultStore]] = tuple,
    ) -> None:
        self._s3 = client
        self.bucket = bucket
        self.inline_max_bytes = inline_max_bytes
        self.region = region
        self.elsewhere = elsewhere  # the other regions' results buckets (a multi-region stack), built when first asked

    def write_once(self, run: Run, document: Any) -> tuple[RunResult, bool]:
        """Write the result with If-None-Match: *. Returns (result, written_now).

        A 412 means an earlier attempt already wrote it (promise 3): that object stands, unchanged.

        A job's result of at most `inline_max_bytes` (InlineResultMaxBytes; 0, the default: none) is not written
        to S3: it is returned inline and the outcome's conditional UpdateItem, written anyway, records it with
        the run's end (one write fewer, no S3 request). Exactly-once is the same: an attempt that dies after its
        handler and before that write re-runs, as one that dies before the PutObject does. A workflow step's
        result stays in S3, where its downstream steps read it by key.
        """
        body = json.dumps(document, separators=(",", ":"), sort_keys=True, default=str).encode()
        digest = hashlib.sha256(body).hexdigest()
        if run.workflow_run_id is None and len(body) <= self.inline_max_bytes:
            return RunResult(location=INLINE, sha256=digest, bytes=len(body), inline=body.decode()), True
        return self._put_once(run, body, digest)

    def keep_for_takeover(self, run: Run, result: RunResult) -> None:
        """An inline result whose outcome write lost the lease: written to S3 as a result too large for the record
        is, once, so that the executor that took the run over finds it (`find`) and records it rather than run
        the handler again (a takeover that leased before this write runs it, as on the S3 path)."""
        if result.inline is not None:
            self._put_once(run, result.inline.encode(), result.sha256)

    def _put_once(self, run: Run, body: bytes, digest: str) -> tuple[RunResult, bool]:
        key = result_key(run)
        try:
            self._s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/json",
                IfNoneMatch="*",
                Metadata={"sha256": digest, "run-id": run.id},
            )
        except ClientError as exc:
            if not already_written(exc):
                raise
            existing = self.find(run)
            if existing is None:  # pragma: no cover - 412 means it exists
                raise
            return existing, False
        return RunResult(location=f"s3://{self.bucket}/{key}", sha256=digest, bytes=len(body), region=self.region), True

    def find(self, run: Run) -> RunResult | None:
        """The stored result of a run, if an earlier attempt wrote one (under today's key, or the key results
        had before the spread: an attempt that wrote one before an upgrade is found, not run again)."""
        for key in (result_key(run), legacy_result_key_of(run.tenant, run.job_id, run.id)):
            found = self._head(key)
            if found is not None:
                return found
        return None

    def find_anywhere(self, run: Run) -> RunResult | None:
        """`find`, here, then in the other regions' buckets (a multi-region stack: an attempt in another region
        wrote its result there). A region that does not answer raises: the run is not run again while its result
        may be there."""
        found = self.find(run)
        for store in () if found is not None else self.elsewhere():
            found = store.find(run)
            if found is not None:
                return found
        return found

    def _head(self, key: str) -> RunResult | None:
        try:
            head = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _missing(exc):
                return None
            raise
        return RunResult(
            location=f"s3://{self.bucket}/{key}",
            sha256=head.get("Metadata", {}).get("sha256", ""),
            bytes=int(head["ContentLength"]),
            region=self.region,
        )

    def write_logs_once(self, run: Run, document: dict[str, Any]) -> bool:
        """Write the current attempt's log with If-None-Match: *. False when it was there already (a 412): that
        object stands, unchanged."""
        try:
            self._s3.put_object(
                Bucket=self.bucket,
                Key=logs_key(run),
                Body=json.dumps(document, separators=(",", ":"), default=str).encode(),
                ContentType="application/json",
                IfNoneMatch="*",
                Metadata={"run-id": run.id},
            )
        except ClientError as exc:
            if not already_written(exc):
                raise
            return False
        return True

    def write_checkpoint(self, key: str, body: bytes) -> None:
        """A checkpoint's document, before the run item points to it (`checkpoint_key`)."""
        self._s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType="application/json")

    def read_checkpoint(self, key: str) -> Any:
        """A checkpoint's document: here, or (a multi-region stack) in the bucket of the region whose attempt saved
        it, the run item naming only its key."""
        try:
            return self._checkpoint_here(key)
        except ClientError as exc:
            if not _missing(exc):
                raise
            for store in self.elsewhere():
                try:
                    return store._checkpoint_here(key)
                except ClientError as elsewhere:
                    if not _missing(elsewhere):
                        raise
            raise

    def _checkpoint_here(self, key: str) -> Any:
        return json.loads(self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def delete_checkpoint(self, key: str) -> None:
        """A checkpoint object no run item points to any more (superseded, or refused by the fence)."""
        self._s3.delete_object(Bucket=self.bucket, Key=key)

    def write_live_logs(self, run: Run, document: dict[str, Any]) -> None:
        """The running attempt's lines so far (`live_logs_key`), replacing its previous flush."""
        self._s3.put_object(
            Bucket=self.bucket,
            Key=live_logs_key(run),
            Body=json.dumps(document, separators=(",", ":"), default=str).encode(),
            ContentType="application/json",
            Metadata={"run-id": run.id},
        )

    def read_logs(self, run: Run) -> list[dict[str, Any]]:
        """The logs of a run's attempts, in the order they ran: one listing, then one read per attempt that logged
        (a run keeps at most its attempts' worth: max_attempts is at most 100, per execution). An attempt with no
        log of its own yet (running, or its executor died) is read from its last flush (`live_logs_key`)."""
        prefix = logs_prefix_of(run.tenant, run.job_id, run.id)
        keys: list[str] = []
        for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            keys += [item["Key"] for item in page.get("Contents", [])]
        kept = set(keys)
        documents = []
        for key in sorted(keys, key=lambda k: k.removesuffix(LIVE).removesuffix(".json")):
            if key.endswith(LIVE) and key.removesuffix(LIVE) + ".json" in kept:
                continue  # the attempt ended and kept its log: its last flush is a part of it
            try:
                obj = self._s3.get_object(Bucket=self.bucket, Key=key)
            except ClientError as exc:
                if _missing(exc):  # gone since the listing (expired): nothing to show for it
                    continue
                raise
            documents.append(json.loads(obj["Body"].read()))
        return documents

    def read(self, run: Run) -> Any | None:
        if run.result is not None and run.result.inline is not None:
            return json.loads(run.result.inline)  # kept in the run record: no S3 request
        return self.read_of(run.tenant, run.job_id, run.id)

    def read_of(self, tenant: str, job_id: str, run_id: str, *, max_bytes: int | None = None) -> Any | None:
        """A run's result document by its ids (None if there is none), without reading the run first; a result
        written before the spread is read under its old key (a second GetObject, only when the first misses).

        `max_bytes`: read no more than that; a larger result raises ResultTooLarge, its body unread. The same
        one GetObject, ranged: its answer gives the object's whole size, and carries at most max_bytes + 1."""
        ranged = {"Range": f"bytes=0-{max_bytes}"} if max_bytes is not None else {}
        for key in (result_key_of(tenant, job_id, run_id), legacy_result_key_of(tenant, job_id, run_id)):
            try:
                obj = self._s3.get_object(Bucket=self.bucket, Key=key, **ranged)
            except ClientError as exc:
                if _missing(exc):
                    continue
                raise
            if max_bytes is not None and (size := _object_size(obj)) > max_bytes:
                obj["Body"].close()
                raise ResultTooLarge(size, max_bytes)
            return json.loads(obj["Body"].read())
        return None


class ResultTooLarge(Exception):
    """A result larger than its reader may hold (ResultStore.read_of's `max_bytes`)."""

    def __init__(self, size: int, max_bytes: int) -> None:
        super().__init__(f"the result is {size} bytes, over the {max_bytes} bytes that may be read")
        self.size = size
        self.max_bytes = max_bytes


def _object_size(obj: dict[str, Any]) -> int:
    """The whole object's size, from a ranged GetObject's Content-Range (`bytes 0-99/1234`)."""
    content_range = obj.get("ContentRange")
    if content_range and "/" in content_range:
        return int(content_range.rsplit("/", 1)[1])
    return int(obj["ContentLength"])
