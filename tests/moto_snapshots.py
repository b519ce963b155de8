"""The in-process tests' stack, provisioned once per test process and restored from a copy of moto's state after.

Provisioning template.yaml (a table, eight queues, two buckets: about 30 requests through boto3 into moto) takes 0.2
to 0.4 s and ends in the same moto state every time; a deep copy of that state takes about 10 ms. So the first test
of a process provisions for real, through `tickwork_local.aws.provision` as `tickwork dev` does, and moto's backends are
copied right after; each later test starts from a fresh copy of them, put into its own fresh mock. A test sees the
same resources, as moto made them, without their requests.

It restores only into a mock where nothing exists yet: a test that made something before its stack (a secret, a
second stack) gets a real provisioning, as does any other parameter set, account or region. The template is the repository's, the same for a test
process's life.
"""

from __future__ import annotations

import copy
import copyreg
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.base_backend import BackendDict
from tickwork_local.aws.provision import ProvisionedResources, provision
from tickwork_local.stack.template import load_template

# A backend holds locks and conditions (an SQS queue's message lock), which copy.deepcopy refuses: a copy gets new
# ones, unheld (nothing holds one between two requests).
_FRESH_SYNCHRONISERS: dict[type, Any] = {
    type(threading.Lock()): lambda _: (threading.Lock, ()),
    type(threading.RLock()): lambda _: (threading.RLock, ()),
    threading.Condition: lambda _: (threading.Condition, ()),
    threading.Event: lambda _: (threading.Event, ()),
}


@contextmanager
def _synchronisers_copied_fresh() -> Iterator[None]:
    """While copying only: elsewhere in the process, pickling a lock stays an error."""
    added = {kind: reducer for kind, reducer in _FRESH_SYNCHRONISERS.items() if kind not in copyreg.dispatch_table}
    copyreg.dispatch_table.update(added)
    try:
        yield
    finally:
        for kind in added:
            del copyreg.dispatch_table[kind]


@dataclass
class _Snapshot:
    services: list[BackendDict[Any]]
    state: list[dict[str, dict[str, Any]]]  # per service: account -> region -> backend, as provisioning left them
    resources: ProvisionedResources

    def copied_state(self) -> list[dict[str, dict[str, Any]]]:
        # The services stay themselves (module singletons a backend may name); everything under them is copied.
        memo: dict[int, Any] = {id(service): service for service in self.services}
        with _synchronisers_copied_fresh():
            return copy.deepcopy(self.state, memo)


_snapshots: dict[tuple[Any, ...], _Snapshot] = {}


def _nothing_exists_yet() -> bool:
    return not BackendDict._instances  # type: ignore[misc]


def _moto_state() -> tuple[list[BackendDict[Any]], list[dict[str, dict[str, Any]]]]:
    services = list(BackendDict._instances)  # type: ignore[misc]
    return services, [{account: dict(regions) for account, regions in service.items()} for service in services]


def provisioned_stack(*, dynamodb: Any, sqs: Any, s3: Any, parameters: Mapping[str, str]) -> ProvisionedResources:
    """What `provision(template.yaml, ..., parameters=...)` returns, and moto's state as it leaves it."""
    key = (tuple(sorted(parameters.items())), dynamodb.meta.region_name, DEFAULT_ACCOUNT_ID)
    fresh_mock = _nothing_exists_yet()
    snapshot = _snapshots.get(key)
    if snapshot is None or not fresh_mock:
        resources = provision(load_template(), dynamodb=dynamodb, sqs=sqs, s3=s3, parameters=parameters)
        if fresh_mock:
            services, state = _moto_state()
            _snapshots[key] = _Snapshot(services, _Snapshot(services, state, resources).copied_state(), resources)
        return resources
    state = snapshot.copied_state()
    for service, accounts in zip(snapshot.services, state, strict=True):
        for account, regions in accounts.items():
            account_backends = service[account]  # registers the service with this mock, for its reset
            for region, backend in regions.items():
                dict.__setitem__(account_backends, region, backend)
    return snapshot.resources  # names and URLs, the same in every copy; nothing changes them
