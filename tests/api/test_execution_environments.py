"""The API's local execution environments (tickwork_local.runtime.lambda_runtime.load_handler_module) in one
process: each reads only its own invocation's request, however the invocations of others interleave with it, as
an environment of its own process (a Lambda execution environment) does."""

from __future__ import annotations

import threading
from typing import Any

from tests.api.conftest import GLOBEX, Reply, separate_environments


def test_an_environment_reads_its_own_request_while_another_environment_serves_one(api, pipeline):
    """Environment one's request is in its first DynamoDB call while environment two serves a whole request of
    another caller on a thread of its own (the interleaving injected at the call, on the real client). One's 404
    names its own request's path, not two's."""
    one, two = separate_environments(pipeline, 2)
    missing = "/v1/jobs/j01m7yzmhg0s2eb1bkkznhryz7"
    other = "/v1/jobs/j01m7yzmhg0pyshpqbvbc1hmf3"
    served: list[Reply] = []

    def serve_another_request_meanwhile(**_: Any) -> None:
        if served:
            return  # two's own calls, and one's after it
        served.append(Reply(0, {}, ""))
        meanwhile = threading.Thread(target=lambda: served.append(two.get(other, identity=GLOBEX)))
        meanwhile.start()
        meanwhile.join()

    events = pipeline.services.clients.client("dynamodb").meta.events
    events.register("before-call.dynamodb", serve_another_request_meanwhile)
    try:
        reply = one.get(missing)
    finally:
        events.unregister("before-call.dynamodb", serve_another_request_meanwhile)
    assert served[-1].status == 404  # two was served meanwhile
    assert served[-1].json["instance"] == other
    assert reply.status == 404
    assert reply.json["instance"] == missing
