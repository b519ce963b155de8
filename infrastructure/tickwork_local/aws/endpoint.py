"""The AWS endpoint a local node talks to: a moto server started here (in a child process), or one to
attach to. Only the standard library here: the parent process never imports moto."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request

READY_PREFIX = "moto listening on port "


class PortInUse(OSError):
    pass


class MotoFailed(RuntimeError):
    pass


def check_port_free(host: str, port: int) -> None:
    """Raise PortInUse if nothing can listen on host:port (0 always passes: the system picks one)."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise PortInUse(exc.errno, f"{host}:{port} is already in use") from None
            raise


def endpoint_reachable(url: str, timeout: float = 10.0) -> bool:
    """True if something answers HTTP at `url` (any status: AWS endpoints answer 4xx to a bare GET). A busy
    endpoint may take seconds to answer (moto under a soak's load): slow is not absent."""
    try:
        urllib.request.urlopen(url, timeout=timeout)  # noqa: S310 - a URL the user gave for an endpoint
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return True


class MotoProcess:
    """A ThreadedMotoServer in a child process, on host:port (port 0: any free port)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 5000, *, one_dynamodb_region: str | None = None) -> None:
        self.host = host
        self.port = port
        self.one_dynamodb_region = one_dynamodb_region  # every region's DynamoDB is this one's (MRSC, locally)
        self.process: subprocess.Popen[str] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> str:
        check_port_free(self.host, self.port)
        command = [
            sys.executable,
            "-m",
            "tickwork_local.aws.motoserver",
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--parent-pid",
            str(os.getpid()),
        ]
        if self.one_dynamodb_region:
            command += ["--one-dynamodb-region", self.one_dynamodb_region]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.process = subprocess.Popen(  # noqa: S603 - our own module, with this interpreter
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(self.process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        line = ready[0] if ready else ""
        if not line.startswith(READY_PREFIX):
            self.stop()
            error = self.process.stderr.read() if self.process.stderr and self.process.poll() is not None else ""
            raise MotoFailed(f"moto did not start: {line.strip() or error.strip() or 'timed out'}")
        self.port = int(line[len(READY_PREFIX) :].strip())
        return self.endpoint_url

    def stop(self, timeout: float = 2.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout)
