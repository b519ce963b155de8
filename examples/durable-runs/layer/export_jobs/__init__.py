"""`batch_export`: a long export that checkpoints per page, reports its progress and yields before its Lambda ends
(the worked example of docs/durable-runs.md)."""

import hashlib
import json

from pydantic import BaseModel, Field
from tickwork.jobtypes import RunContext, job_type


class ExportPayload(BaseModel):
    pages: int = Field(default=20, ge=1, le=10_000)
    page_seconds: float = Field(default=5, ge=0, le=60)  # how long a page takes to fetch


def fetch_page(page: int, ctx: RunContext, seconds: float) -> list[dict]:
    """Stands in for a paged API: a slow call, then 100 rows."""
    ctx.sleep(seconds)  # sleeps in slices, stopping if the run is cancelled
    return [{"id": page * 100 + i, "value": (page * 7 + i) % 13} for i in range(100)]


@job_type("batch_export", ExportPayload)
def batch_export(payload: ExportPayload, ctx: RunContext) -> dict:
    state = ctx.last_checkpoint() or {"next_page": 0, "rows": 0, "digest": ""}
    for page in range(state["next_page"], payload.pages):
        rows = fetch_page(page, ctx, payload.page_seconds)
        digest = hashlib.sha256((state["digest"] + json.dumps(rows)).encode()).hexdigest()
        state = {"next_page": page + 1, "rows": state["rows"] + len(rows), "digest": digest}
        ctx.checkpoint(state)  # durable before it returns: a crash from here on resumes at the next page
        ctx.progress((page + 1) / payload.pages, f"page {page + 1} of {payload.pages}", {"rows": state["rows"]})
        ctx.log("page exported", page=page, rows=len(rows))
        if page + 1 < payload.pages and ctx.should_yield():
            return ctx.yield_run()  # goes on in a fresh invocation, from the checkpoint just saved
    return {"pages": payload.pages, "rows": state["rows"], "digest": state["digest"]}
