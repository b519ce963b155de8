"""The API fuzzed over HTTP, through the local runtime's API Gateway stand-in, as a tenant and as an admin
(`tickwork dev --api-keys`, logging at INFO as the template deploys it): what only a real HTTP hop shows
(undeclared methods, the server's own answers, the admin's routes) against the document's statuses, content types
and body schemas; never a 5xx, and every answer within 2 s.

Every operation alone, then along the document's links (stateful: create a job -> get, patch, pause, trigger,
backfill it; trigger -> its run; the same for workflows, calendars and freezes), and every method a path does not
take. The last test checks that the fuzz answered every operation the document has, and followed its links.

tests/api/test_schemathesis.py fuzzes the handler in-process on a fake clock, where schema-valid input must be
accepted too. Here the clock is real, so a schema-valid instant may be past (a 422 naming it is right): the
acceptance checks stay with the in-process run, and this one checks the answers.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import max_response_time, not_a_server_error
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.e2e.conftest import Node, running_node
from tests.openapi_formats import register_openapi_formats

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

KEYS = {"tenant-key": "acme", "admin-key": {"tenant": "ops", "admin": True}}
CALLERS = {"tenant": "tenant-key", "admin": "admin-key"}
ADMINS_PATHS = "^/v1/(tenants|metrics)"
ANSWER_SECONDS = 2.0  # issue 34's bound on every answer (schemathesis's max_response_time check)
# A stalled answer ends the request (and fails the test) instead of hanging the suite.
REQUEST_TIMEOUT_SECONDS = 30.0

CHECKS = [
    not_a_server_error,
    max_response_time,  # within ANSWER_SECONDS (the schema's config below)
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    unsupported_method,
    allow_header_conformance,
]
FUZZ = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

# The operations each run answered (run -> operation label -> answers): what the last test checks.
ANSWERED: dict[str, Counter[str]] = defaultdict(Counter)


def _answered(run: str) -> Callable[..., None]:
    """A check that passes, counting the answered operation for `run`."""

    def answered(ctx: Any, response: Any, case: Any) -> None:
        ANSWERED[run][case.operation.label] += 1

    return answered


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    keys: Path = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps(KEYS))
    with running_node("fuzz", "--api-keys", str(keys), "--log-level", "INFO") as started:
        # Warm: the first answer carries the API function's cold start (its imports), which no input causes.
        started.api.get("/v1/health")
        yield started


def _document() -> dict[str, Any]:
    """The document every node serves at /v1/openapi.json (the same code builds it), read at collection."""
    from api.app import openapi_document

    return json.loads(openapi_document())


DOCUMENT = _document()
register_openapi_formats()
schema = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=schemathesis.config.SchemathesisConfig.from_dict(
        {
            "checks": {"max_response_time": ANSWER_SECONDS},
            # No coverage phase: its boundary cases are built at collection (about 110 s of CPU for this document)
            # and run in-process by tests/api/test_schemathesis.py against the same handler; over HTTP, random
            # cases and the links, and the undeclared methods below.
            "phases": {"coverage": {"enabled": False}, "stateful": {"inference": {"algorithms": []}}},
        }
    ),
)


def _call(case: Any, node: Node, caller: str, run: str) -> None:
    case.call_and_validate(
        base_url=node.api.url,
        headers={"X-Api-Key": CALLERS[caller]},
        checks=[*CHECKS, _answered(run)],
        timeout=REQUEST_TIMEOUT_SECONDS,
    )


# One test per caller: schemathesis's parametrize takes no parametrized fixture beside it.
@schema.parametrize()
@FUZZ
def test_every_operation_answers_as_documented_over_http_to_a_tenant(node: Node, case: Any) -> None:
    _call(case, node, "tenant", "tenant")


# Elsewhere the admin is one more tenant: the tenant's run above covers it.
@schema.include(path_regex=ADMINS_PATHS).parametrize()
@FUZZ
def test_the_admins_operations_answer_as_documented_over_http_to_an_admin(node: Node, case: Any) -> None:
    _call(case, node, "admin", "admin")


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_the_documents_links_answer_as_documented_over_http(node: Node, caller: str) -> None:
    key, checks = CALLERS[caller], [*CHECKS, _answered(f"{caller} along the links")]

    class FollowingLinks(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": node.api.url, "headers": {"X-Api-Key": key}, "timeout": REQUEST_TIMEOUT_SECONDS}

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            case.validate_response(response, checks=checks, transport_kwargs=kwargs)

    FollowingLinks.run(
        settings=settings(
            max_examples=15,
            stateful_step_count=6,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
    )


UNDECLARED = ("GET", "PUT", "POST", "PATCH", "DELETE", "TRACE")


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_every_method_a_path_does_not_take_answers_405_with_allow_over_http(node: Node, caller: str) -> None:
    """Each documented path, with each method it does not take: 405 naming the methods it does in `Allow`, within
    the bound (what schemathesis's coverage phase would send, done directly)."""
    wrong: list[str] = []
    for path, item in DOCUMENT["paths"].items():
        declared = {method.upper() for method in item if method.upper() in UNDECLARED}
        url = node.api.url + re.sub(r"\{[^}]+\}", "0" * 8, path)
        for method in sorted(set(UNDECLARED) - declared):
            answer = requests.request(
                method, url, headers={"X-Api-Key": CALLERS[caller]}, timeout=REQUEST_TIMEOUT_SECONDS
            )
            allowed = {m.strip() for m in answer.headers.get("Allow", "").split(",") if m.strip()}
            seconds = answer.elapsed.total_seconds()
            if answer.status_code != 405 or allowed != declared or seconds > ANSWER_SECONDS:
                wrong.append(f"{method} {path}: {answer.status_code}, Allow {sorted(allowed)}, {seconds:.2f} s")
    assert wrong == []


def documented_operations(document: dict[str, Any]) -> set[str]:
    """Every operation of an OpenAPI document, labelled as schemathesis labels them (`GET /v1/jobs`)."""
    methods = {"get", "put", "post", "patch", "delete", "head", "options", "trace"}
    return {
        f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item if method in methods
    }


def link_targets(document: dict[str, Any]) -> set[str]:
    """The operations the document's links lead to (which only the stateful run calls with ids that exist)."""
    by_ref = {
        f"#/paths/{path.replace('~', '~0').replace('/', '~1')}/{method}": f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method in item
    }
    return {
        by_ref[link["operationRef"]]
        for item in document["paths"].values()
        for operation in item.values()
        if isinstance(operation, dict)
        for response in operation.get("responses", {}).values()
        for link in (response.get("links") or {}).values()
    }


def test_the_fuzz_answered_every_operation_of_the_document(request: pytest.FixtureRequest) -> None:
    """The runs above (those this session ran) reached every operation: the tenant's every one the document has,
    the admin's every one of its routes; and each caller's run along the links followed them (it answered
    operations the links lead to: not every one, in its bounded number of scenarios)."""
    documented = documented_operations(DOCUMENT)
    ran = {name for item in request.session.items for name in (item.name, item.name.split("[")[0])}
    runs = {
        "tenant": ("test_every_operation_answers_as_documented_over_http_to_a_tenant", documented),
        "admin": (
            "test_the_admins_operations_answer_as_documented_over_http_to_an_admin",
            {label for label in documented if re.match(ADMINS_PATHS, label.split(" ", 1)[1])},
        ),
    }
    if not ran & {test for test, _ in runs.values()} and not any("links" in name for name in ran):
        pytest.skip("no fuzz ran in this session")
    counts = {run: sum(answered.values()) for run, answered in ANSWERED.items()}
    missing = {run: sorted(expected - set(ANSWERED[run])) for run, (test, expected) in runs.items() if test in ran}
    assert {run: labels for run, labels in missing.items() if labels} == {}, f"answers per run: {counts}"
    targets = link_targets(DOCUMENT)
    for caller in CALLERS:
        if f"test_the_documents_links_answer_as_documented_over_http[{caller}]" in ran:
            followed = targets & set(ANSWERED[f"{caller} along the links"])
            assert followed, f"{caller}: no link followed; answers per run: {counts}"
            print(f"{caller} along the links: {len(followed)} of the {len(targets)} operations links lead to")
