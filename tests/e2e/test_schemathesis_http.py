"""The API fuzzed over HTTP, through the local runtime's API Gateway stand-in, as a tenant and as an admin
(`tickwork dev --api-keys`): what only a real HTTP hop shows (undeclared methods, the server's own answers, the
admin's routes) against the document's statuses, content types and body schemas, and never a 5xx.

tests/api/test_schemathesis.py fuzzes the handler in-process on a fake clock, where schema-valid input must be
accepted too. Here the clock is real, so a schema-valid instant may be past (a 422 naming it is right): the
acceptance checks stay with the in-process run, and this one checks the answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    allow_header_conformance,
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

from tests.e2e.conftest import Node, free_port, start_node

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

KEYS = {"tenant-key": "acme", "admin-key": {"tenant": "ops", "admin": True}}
CALLERS = {"tenant": "tenant-key", "admin": "admin-key"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    unsupported_method,
    allow_header_conformance,
]
FUZZ = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    keys: Path = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps(KEYS))
    started = start_node("fuzz", "--moto-port", str(free_port()), "--api-keys", str(keys))
    try:
        yield started
    finally:
        code = started.proc.terminate()
        assert code == 0, started.proc.output()


def _document() -> dict[str, Any]:
    """The document every node serves at /v1/openapi.json (the same code builds it), read at collection."""
    from api.app import openapi_document

    return json.loads(openapi_document())


schema = schemathesis.openapi.from_dict(
    _document(),
    config=schemathesis.config.SchemathesisConfig.from_dict(
        {"phases": {"stateful": {"inference": {"algorithms": []}}}}
    ),
)


# One test per caller: schemathesis's parametrize takes no parametrized fixture beside it.
@schema.parametrize()
@FUZZ
def test_every_operation_answers_as_documented_over_http_to_a_tenant(node: Node, case: Any) -> None:
    case.call_and_validate(base_url=node.api.url, headers={"X-Api-Key": CALLERS["tenant"]}, checks=CHECKS)


@schema.parametrize()
@FUZZ
def test_every_operation_answers_as_documented_over_http_to_an_admin(node: Node, case: Any) -> None:
    case.call_and_validate(base_url=node.api.url, headers={"X-Api-Key": CALLERS["admin"]}, checks=CHECKS)


@pytest.mark.parametrize("caller", sorted(CALLERS))
def test_the_documents_links_answer_as_documented_over_http(node: Node, caller: str) -> None:
    key = CALLERS[caller]

    class FollowingLinks(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"base_url": node.api.url, "headers": {"X-Api-Key": key}}

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs)

    FollowingLinks.run(
        settings=settings(
            max_examples=10,
            stateful_step_count=6,
            phases=[Phase.generate],
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
        )
    )
