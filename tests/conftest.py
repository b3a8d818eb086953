"""Shared fixtures: MCP servers run as real subprocesses on free loopback ports.

``start_server(argv)`` runs ``[sys.executable, *argv, "--port", PORT]`` from the repository
root, waits (bounded) until the port accepts TCP connections and returns a ``ServerProc``.
Tests normally use the ``server_factory`` fixture (stops what it started) or the
session-wide ``conformance_server`` (``examples/conformance_server.py``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from mcp_http import Running, example_server, running

REPO_ROOT = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 20.0
STOP_GRACE_S = 10.0
CONNECT_PROBE_S = 0.25
POLL_INTERVAL_S = 0.05

# The conformance fixture server; MCP_CONFORMANCE_SERVER (a shell-quoted argv after the
# interpreter, e.g. "/tmp/other_server.py --flag") points the suite at another server.
CONFORMANCE_SERVER_ARGV = ["examples/conformance_server.py"]


class ServerStartError(RuntimeError):
    """The server exited, or did not accept connections before the deadline."""


def free_port(host: str = LOOPBACK) -> int:
    """A port that was free a moment ago (bound to port 0, read back, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


class ServerProc:
    """A server subprocess listening on ``host:port``; its output goes to temporary files."""

    def __init__(
        self, argv: Sequence[str], port: int, env: Mapping[str, str], host: str = LOOPBACK
    ) -> None:
        self.argv = list(argv)
        self.port = port
        self.host = host
        self._log_dir = Path(tempfile.mkdtemp(prefix="tornado-mcp-server-"))
        self._out_path = self._log_dir / "stdout.log"
        self._err_path = self._log_dir / "stderr.log"
        self._final: tuple[str, str] | None = None
        with self._out_path.open("wb") as out, self._err_path.open("wb") as err:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                self.argv,
                cwd=REPO_ROOT,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://{self.host}:{self.port}/mcp"

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def stdout(self) -> str:
        """Everything the server wrote to stdout so far."""
        return self._final[0] if self._final else _read(self._out_path)

    @property
    def stderr(self) -> str:
        """Everything the server wrote to stderr so far."""
        return self._final[1] if self._final else _read(self._err_path)

    def diagnostics(self, limit: int = 4000) -> str:
        """A text block for assertion messages: argv, exit status, output tails."""
        return (
            f"server argv: {shlex.join(self.argv)}\n"
            f"server exit status: {self.proc.poll()} (None = running)\n"
            f"--- server stdout ---\n{_tail(self.stdout, limit)}\n"
            f"--- server stderr ---\n{_tail(self.stderr, limit)}"
        )

    def wait_until_listening(self, timeout: float = START_TIMEOUT_S) -> None:
        """Poll with short connect attempts until the port accepts, bounded by ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerStartError(f"server exited during start-up\n{self.diagnostics()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=CONNECT_PROBE_S):
                    return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                raise ServerStartError(
                    f"server did not accept connections on {self.host}:{self.port} "
                    f"within {timeout:.0f} s\n{self.diagnostics()}"
                )
            time.sleep(POLL_INTERVAL_S)

    def stop(self, grace: float = STOP_GRACE_S) -> int | None:
        """SIGTERM, wait up to ``grace`` seconds, then SIGKILL. Idempotent."""
        if self._final is not None:
            return self.proc.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=grace)
        self._final = (_read(self._out_path), _read(self._err_path))
        shutil.rmtree(self._log_dir, ignore_errors=True)
        return self.proc.returncode

    def __enter__(self) -> ServerProc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def start_server(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    timeout: float = START_TIMEOUT_S,
) -> ServerProc:
    """Start ``python *argv --port PORT`` from the repository root on a free loopback port.

    ``env`` adds to (overrides) the inherited environment. Returns once the port accepts TCP
    connections; raises ``ServerStartError`` (after stopping the process) otherwise.
    """
    port = free_port()
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    server = ServerProc([sys.executable, *argv, "--port", str(port)], port, full_env)
    try:
        server.wait_until_listening(timeout)
    except BaseException:
        server.stop()
        raise
    return server


ServerFactory = Callable[..., ServerProc]


@pytest.fixture
def server_factory() -> Iterator[ServerFactory]:
    """``server_factory(argv, env=None)`` starts a server; all are stopped after the test."""
    started: list[ServerProc] = []

    def factory(
        argv: Sequence[str], env: Mapping[str, str] | None = None, **kwargs: float
    ) -> ServerProc:
        server = start_server(argv, env, **kwargs)
        started.append(server)
        return server

    yield factory
    for server in reversed(started):
        server.stop()


def conformance_server_argv() -> list[str]:
    override = os.environ.get("MCP_CONFORMANCE_SERVER")
    return shlex.split(override) if override else list(CONFORMANCE_SERVER_ARGV)


@pytest.fixture(scope="session")
def conformance_server() -> Iterator[ServerProc]:
    """``examples/conformance_server.py`` on a free port, shared by the whole session."""
    with start_server(conformance_server_argv()) as server:
        yield server


@pytest.fixture
async def srv() -> AsyncIterator[Running]:
    """The example server (``examples/conformance_server.py``) in process, on its own port."""
    async with running(example_server()) as s:
        yield s
