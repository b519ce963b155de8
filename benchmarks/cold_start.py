"""What a Lambda's cold start spends building its AWS clients, each measured in a fresh interpreter.

    python -m benchmarks.cold_start

A container builds its clients on its first event (never at import). `AwsClients` builds them all from one boto3
session; the other way, a session per client, parses the SDK's endpoint and service data once per client. Both
are measured for the five clients an executor may build (DynamoDB, SQS, S3, CloudWatch, Lambda), each in a new
Python process, as a new container would (the median of several).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from statistics import median

from benchmarks import ROOT, prepare_environment

SERVICES = ("dynamodb", "sqs", "s3", "cloudwatch", "lambda")
REPEATS = 5

_PROBE = """
import json, sys, time
started = time.perf_counter()
import boto3
from tickwork.aws.clients import AwsClients
imported = time.perf_counter()
services = json.loads(sys.argv[2])
if sys.argv[1] == "one session (AwsClients)":
    clients = AwsClients()
    for service in services:
        clients.client(service)
else:
    for service in services:
        boto3.session.Session().client(service)
print(json.dumps({"import_ms": (imported - started) * 1000, "clients_ms": (time.perf_counter() - imported) * 1000}))
"""

MODES = ("one session (AwsClients)", "a session per client")


def measure(mode: str) -> dict[str, float]:
    samples = []
    for _ in range(REPEATS):
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, mode, json.dumps(SERVICES)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "shared")},
        )
        samples.append(json.loads(done.stdout))
    return {key: round(median(s[key] for s in samples), 1) for key in ("import_ms", "clients_ms")}


def main() -> None:
    prepare_environment()
    print(f"Building {len(SERVICES)} clients ({', '.join(SERVICES)}) in a new process, median of {REPEATS}:")
    for mode in MODES:
        figures = measure(mode)
        print(
            f"  {mode:26s} clients {figures['clients_ms']:7.1f} ms   (importing boto3: {figures['import_ms']:.1f} ms)"
        )


if __name__ == "__main__":
    main()
