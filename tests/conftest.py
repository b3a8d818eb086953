"""Shared fixtures: MCP servers as real subprocesses, and the example server in process.

``start_server(argv)`` runs ``[sys.executable, *argv, "--port", "0"]`` from the repository
root: the server binds an ephemeral port and prints ``MCP endpoint: http://HOST:PORT/PATH``
on stdout once listening (the documented start-up line); the port is read from that line
(bounded wait) and a ``ServerProc`` returned.  No port is picked beforehand, so nothing can
take it in between.  Tests normally use the ``server_factory`` fixture (stops what it
started) or the session-wide ``conformance_server`` (``examples/conformance_server.py``).
``srv`` is ``examples/conformance_server.py`` served in process (see ``mcp_http.running``).
"""

from __future__ import annotations

import contextlib
import os
import re
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

#: The version matrix.  ``./dev test`` runs the whole suite on the main interpreter and
#: the newest Tornado, then each group here again on the other versions ``dev`` names for
#: it (``MATRIX`` there), as ``pytest --matrix GROUP``: only the directories and files
#: listed (relative to ``tests/``) are collected.  To put more tests in the matrix, add
#: their directory or file here.
VERSION_MATRIX: dict[str, tuple[str, ...]] = {
    # the HTTP, stdio and unit tests, on Python 3.12 and 3.13
    "python": ("http", "stdio", "unit"),
    # the HTTP and host-app tests, on the newest Tornado 6.4 and 6.5
    "tornado": ("http", "hosting"),
}
TESTS_ROOT = Path(__file__).resolve().parent

# The conformance fixture server; MCP_CONFORMANCE_SERVER (a shell-quoted argv after the
# interpreter, e.g. "/tmp/other_server.py --flag") points the suite at another server; it
# must take ``--port 0`` and print the ``MCP endpoint: ...`` line as ours do.
CONFORMANCE_SERVER_ARGV = ["examples/conformance_server.py"]


#: The line every server prints on stdout once it listens.
ENDPOINT_LINE = re.compile(r"^MCP endpoint: http://(?P<host>[^\s/]+):(?P<port>\d+)(?P<path>/\S*)$",
                           re.MULTILINE)


class ServerStartError(RuntimeError):
    """The server exited, or did not report its endpoint before the deadline."""


def reported_endpoint(stdout: str) -> tuple[str, int, str] | None:
    """``(host, port, path)`` from the first ``MCP endpoint: ...`` line of ``stdout``."""
    m = ENDPOINT_LINE.search(stdout)
    if m is None:
        return None
    return m.group("host").strip("[]"), int(m.group("port")), m.group("path")


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[...]\n" + text[-limit:]


class ServerProc:
    """A server subprocess listening on ``host:port``; its output goes to temporary files."""

    def __init__(
        self, argv: Sequence[str], env: Mapping[str, str], host: str = LOOPBACK,
        cwd: Path = REPO_ROOT,
    ) -> None:
        self.argv = list(argv)
        self.port = 0  # known once the server reports it (wait_until_listening)
        self.path = "/mcp"
        self.host = host
        self._log_dir = Path(tempfile.mkdtemp(prefix="tornado-mcp-server-"))
        self._out_path = self._log_dir / "stdout.log"
        self._err_path = self._log_dir / "stderr.log"
        self._final: tuple[str, str] | None = None
        with self._out_path.open("wb") as out, self._err_path.open("wb") as err:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
            )

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://{self.host}:{self.port}{self.path}"

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
        """Wait, bounded by ``timeout``, for the endpoint line on stdout; take the port from
        it and check that it accepts a connection."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerStartError(f"server exited during start-up\n{self.diagnostics()}")
            endpoint = reported_endpoint(self.stdout)
            if endpoint is not None:
                _host, self.port, self.path = endpoint
                with socket.create_connection((self.host, self.port), timeout=CONNECT_PROBE_S):
                    return
            if time.monotonic() >= deadline:
                raise ServerStartError(
                    f"server did not report its endpoint within {timeout:.0f} s\n"
                    f"{self.diagnostics()}")
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
    """Start ``python *argv --port 0`` from the repository root on an ephemeral port.

    ``env`` adds to (overrides) the inherited environment. Returns once the server has
    reported its endpoint and the port accepts TCP connections; raises ``ServerStartError``
    (after stopping the process) otherwise.
    """
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    server = ServerProc([sys.executable, *argv, "--port", "0"], full_env)
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
    """``examples/conformance_server.py`` on an ephemeral port, shared by the whole session."""
    with start_server(conformance_server_argv()) as server:
        yield server


@pytest.fixture
async def srv() -> AsyncIterator[Running]:
    """The example server (``examples/conformance_server.py``) in process, on its own port."""
    async with running(example_server()) as s:
        yield s


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--matrix", choices=sorted(VERSION_MATRIX), default=None,
        help="collect only this group of the version matrix (VERSION_MATRIX in "
             "tests/conftest.py); ./dev test runs each group on the versions dev names")


def in_matrix(group: str, path: Path) -> bool:
    """Whether ``path`` (a directory or file under ``tests/``) is or holds part of
    ``group``: the listed paths, what they contain, and the directories above them."""
    try:
        relative = path.resolve().relative_to(TESTS_ROOT)
    except ValueError:
        return False
    if relative == Path():
        return True
    for entry in map(Path, VERSION_MATRIX[group]):
        if relative == entry or entry in relative.parents or relative in entry.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    group = config.getoption("matrix")
    if group is None or in_matrix(group, collection_path):
        return None
    return True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked ``slow`` first (each keeps its place among its kind): in parallel
    workers (pytest-xdist) the longest tests then start at once instead of ending the run
    alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
