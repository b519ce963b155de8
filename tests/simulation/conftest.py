"""The simulation's fixture: one World (tests/simulation/world.py) over the timed pipeline, at the deployed log
level, for every example of a test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def world(timed_pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import moto.sqs.models
    from api import app as api_app
    from tickwork.observability import logger

    from tests.api.conftest import ApiClient
    from tests.simulation.machine import WORLD
    from tests.simulation.world import World

    # Each example purges the queues at the same fake instant (SQS allows one purge a minute).
    monkeypatch.setattr(moto.sqs.models, "sqs_enforce_strict_queue_purge_behaviour", lambda: False)
    monkeypatch.setenv("API_AUTH_MODE", "iam")
    monkeypatch.delenv("API_KEYS_FILE", raising=False)
    # The deployed log level (the template's LogLevel): logged as deployed (a record that cannot be made still
    # raises), written nowhere.
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "INFO")
    level = logger.log_level
    logger.setLevel("INFO")
    streams = [(handler, handler.setStream(open(os.devnull, "w"))) for handler in logger.handlers]  # noqa: SIM115
    api_app.use_services(timed_pipeline.services)
    WORLD[:] = [World(timed_pipeline, ApiClient(timed_pipeline))]
    try:
        yield WORLD[0]
    finally:
        WORLD.clear()
        api_app.use_services(None)
        logger.setLevel(level)
        for handler, stream in streams:
            if stream is not None:
                handler.setStream(stream).close()
