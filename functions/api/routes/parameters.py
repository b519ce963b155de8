"""Path and query parameters more than one route takes, as the OpenAPI document describes them."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler.openapi.params import Path as PathParam
from aws_lambda_powertools.event_handler.openapi.params import Query
from pydantic import BeforeValidator, StringConstraints
from tickwork.control.run_searches import TAG_FILTER_MAX_LENGTH, TAG_FILTER_PATTERN
from tickwork.store import MAX_LIMIT, TENANT

# Path ids arrive as sent, percent-encoded (API Gateway's rawPath); they are decoded before their length is
# checked, so the check (and the id the route gets) is the one the OpenAPI document describes.
JobId = Annotated[
    str,
    BeforeValidator(unquote),
    PathParam(description="A job id, such as j01jd2k3m4n5p6q7r8s9t0v1w2.", max_length=64),
]
# A step's run id is the longest: a workflow run id (41 characters), `.s-` and a step id of up to 64.
RunId = Annotated[
    str,
    BeforeValidator(unquote),
    PathParam(
        description="A run id: `<job id>.<13-digit ms>` (or `...m` for manual), or a workflow step's run: "
        "`<workflow run id>.s-<step id>`.",
        max_length=128,
    ),
]
# A pattern stands before the decoding: after it, pydantic would still check it but leave it out of the document.
WorkflowId = Annotated[
    str,
    StringConstraints(pattern=r"^w[0-9a-z]{25}$"),
    BeforeValidator(unquote),
    PathParam(description="A workflow id, such as w01jd2k3m4n5p6q7r8s9t0v1w2."),
]
WorkflowRunId = Annotated[
    str,
    StringConstraints(pattern=r"^w[0-9a-z]{25}\.[0-9]{13}(\.m)?$"),
    BeforeValidator(unquote),
    PathParam(description="A workflow run id: `<workflow id>.<13-digit ms>` (or `...m` for a manual trigger)."),
]
# A tenant name holds `/` and `:` when it comes from an IAM identity: sent percent-encoded (%2F), decoded here.
TenantName = Annotated[
    str,
    StringConstraints(pattern=TENANT.pattern),
    BeforeValidator(unquote),
    PathParam(description="A tenant name, percent-encoded (`123456789012:role%2Fops`); `me` is the caller's own."),
]
# A read's tenant (Caller.tenant_to_read), on every route that takes one: a tenant name, as a tenant's anywhere, or
# `*` (EVERY_TENANT, which no name can be); anything else is a 422 naming `tenant`.
ReadTenant = Annotated[
    str | None,
    Query(
        pattern=rf"(?:{TENANT.pattern})|^\*$",
        description="An admin's: this tenant's, as it sees them, or `*`, every tenant's, each item naming its "
        "tenant. A tenant may name only its own (403 otherwise, as for `*`).",
    ),
]
TagFilter = Annotated[
    str | None,
    Query(
        pattern=TAG_FILTER_PATTERN,
        max_length=TAG_FILTER_MAX_LENGTH,
        description="`key=value`: only jobs whose tag `key` is `value` (the first `=` ends the key).",
    ),
]


def tag_pair(tag: str | None) -> tuple[str, str] | None:
    """A TagFilter's (key, value)."""
    if tag is None:
        return None
    key, value = tag.split("=", 1)
    return key, value


Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Page size, 1 to {MAX_LIMIT}.")]
Cursor = Annotated[str | None, Query(max_length=512, description="`next_cursor` of the previous page.")]

# An optional body's default: None, without making the body's schema nullable (`null` is refused).
NO_BODY: Any = None
