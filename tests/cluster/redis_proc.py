"""A real redis-server for the cluster tests, on a Unix socket of its own, that a test can
kill and start again on the same socket (an outage and a recovery)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

REDIS = shutil.which("redis-server")
START_TIMEOUT_S = 10.0


class RedisProc:
    def __init__(self) -> None:
        if REDIS is None:
            if os.environ.get("CI"):
                pytest.fail("redis-server is not installed (./dev test installs it)")
            pytest.skip("redis-server is not installed")
        self.workdir = tempfile.mkdtemp(prefix="tmcp-cl-")  # short: socket paths are limited
        self.path = os.path.join(self.workdir, "redis.sock")
        self.url = f"unix://{self.path}?db=0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        assert REDIS is not None
        self.proc = subprocess.Popen(
            [REDIS, "--port", "0", "--unixsocket", self.path, "--save", "",
             "--appendonly", "no", "--dir", self.workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as probe:
                    probe.settimeout(0.2)
                    probe.connect(self.path)
                return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def kill(self) -> None:
        """An outage: SIGKILL, nothing saved (the restarted server starts empty)."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None
        shutil.rmtree(self.workdir, ignore_errors=True)


@pytest.fixture(name="redis")
def redis_fixture() -> Iterator[RedisProc]:
    """The ``redis`` fixture: a started redis-server, stopped after the test.  A test module
    imports ``redis_fixture`` to use it (no conftest.py here: test modules import the root
    one by the bare name ``conftest``, which a second one would shadow)."""
    proc = RedisProc()
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def redis_url() -> Iterator[str]:
    """The URL of a real redis-server started for the test (and stopped after it)."""
    proc = RedisProc()
    proc.start()
    try:
        yield proc.url
    finally:
        proc.stop()
