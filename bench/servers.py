"""Process management for the servers under test.

Every server runs in its own process on loopback. This module finds a free port,
starts the process (pinned to CPU 0 when the machine has more than one, while the
load generator keeps CPU 1), waits for it to answer with a bounded loop, reads its
CPU time and RSS from /proc, and stops it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HOST = "127.0.0.1"
BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
READY_TIMEOUT_S = 20.0
#: The bench configuration: the transport's cost, with no dashboard, no body timeout and
#: plain ``def`` tools (the echo) run on the IOLoop rather than handed to the thread pool.
DEFAULT_OURS = ("python examples/conformance_server.py --no-admin --log-level warning"
                " --sync-handler-threads none --body-timeout none")
#: What a user runs: the same server with its defaults (a 60 s body timeout, plain ``def``
#: tools in the pool of 4 threads); only the dashboard and the access log are off.
DEFAULTS_OURS = "python examples/conformance_server.py --no-admin --log-level warning"
#: The defaults with the echo tool an ``async def`` (it needs no thread).
ASYNC_ECHO_OURS = "python bench/fixtures/async_echo_server.py --no-admin --log-level warning"
#: The embedding API's path, in a host application with its defaults (``embedded``).
EMBEDDED_OURS = "python bench/fixtures/embedded_server.py --log-level warning"
STOP_TIMEOUT_S = 5.0


def _initial_cpus() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return list(range(os.cpu_count() or 1))


# Captured at import, before the bench pins itself: the server gets the first
# CPU, the load generator (this process, wrk) the second.
CPUS = _initial_cpus()
SERVER_CPU = CPUS[0]
LOADGEN_CPU = CPUS[1] if len(CPUS) > 1 else CPUS[0]


class BenchError(RuntimeError):
    """A scenario could not complete (a server misbehaved or a check failed)."""


@dataclass(frozen=True)
class ServerOptions:
    """What a scenario asks of a server: the wire mode and its bounds."""

    json_response: bool = False
    stateless: bool = False
    unbounded: bool = False  # no cap on sessions or listen streams (S2-S4 open thousands)


@dataclass(frozen=True)
class Target:
    """A server the bench can start: a name and how to build its command line."""

    name: str
    label: str
    kind: str  # "mcp" (a real MCP server) or "bare" (the bare Tornado ceiling)
    build: Callable[[int, ServerOptions], list[str]]
    supports_modern: bool = True
    supports_legacy_get: bool = True

    def command(self, port: int, options: ServerOptions) -> list[str]:
        return self.build(port, options)


def python_exe() -> str:
    return sys.executable


def bare_target(read_chunk: int | None = None) -> Target:
    """Bare Tornado as it ships (``bare``), or with the HTTP server reading ``read_chunk``
    bytes at a time (``bare-read``: the read size the tornado-mcp servers use)."""
    script = BENCH_DIR / "fixtures" / "bare_tornado.py"

    def build(port: int, options: ServerOptions) -> list[str]:
        argv = [python_exe(), str(script), "--port", str(port)]
        return argv if read_chunk is None else [*argv, "--read-chunk", str(read_chunk)]

    if read_chunk is None:
        return Target("bare", "bare Tornado", "bare", build)
    return Target("bare-read", f"bare Tornado, {read_chunk // 1024} KiB reads", "bare", build)


def sdk_target() -> Target:
    script = BENCH_DIR / "fixtures" / "sdk_server.py"

    def build(port: int, options: ServerOptions) -> list[str]:
        argv = [python_exe(), str(script), "--port", str(port)]
        if options.json_response:
            argv += ["--json-response", "true"]
        if options.stateless:
            argv += ["--stateless", "true"]
        return argv

    return Target("sdk", "Python SDK", "mcp", build)


def ts_target(command: str) -> Target:
    """The official TypeScript SDK fixture (optional; needs node + npm install)."""
    base = shlex.split(command)

    def build(port: int, options: ServerOptions) -> list[str]:
        argv = [*base, "--port", str(port)]
        if options.json_response:
            argv += ["--json-response", "true"]
        return argv

    return Target("ts", "TypeScript SDK", "mcp", build, supports_modern=False)


def ours_target(command: str, uvloop: bool = False, name: str = "ours",
                label: str = "tornado-mcp") -> Target:
    """Our server: ``command`` is split like a shell would, then flags are appended
    (``--uvloop`` too for the ``uvloop`` target: the same server on uvloop's event loop).
    ``name`` and ``label`` tell configurations apart (``defaults``, ``defaults-async``)."""
    base = [python_exe() if part == "python" else part for part in shlex.split(command)]
    if uvloop:
        base.append("--uvloop")

    def build(port: int, options: ServerOptions) -> list[str]:
        argv = [*base, "--port", str(port)]
        if options.json_response:
            argv += ["--json-response", "true"]
        if options.stateless:
            argv += ["--stateless", "true"]
        if options.unbounded:
            argv += ["--max-sessions", "none", "--max-listen-subscriptions", "none"]
        return argv

    if uvloop:
        return Target("uvloop", "tornado-mcp + uvloop", "mcp", build)
    return Target(name, label, "mcp", build)


def defaults_target(command: str = DEFAULTS_OURS) -> Target:
    """Our server as a user runs it (body timeout and thread pool on)."""
    return ours_target(command, name="defaults", label="tornado-mcp defaults")


def async_echo_target(command: str = ASYNC_ECHO_OURS) -> Target:
    """The defaults with the echo tool an ``async def``."""
    return ours_target(command, name="defaults-async", label="defaults, async echo")


def embedded_target(echo: str = "def") -> Target:
    """The example server's tools mounted by the documented embedding API into a host
    application, with the defaults (``bench/fixtures/embedded_server.py``)."""
    command = f"{EMBEDDED_OURS} --echo {echo}"
    if echo == "async":
        return ours_target(command, name="embedded-async", label="embedded, async echo")
    return ours_target(command, name="embedded", label="embedded")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def cpu_count() -> int:
    return len(CPUS)


def pin(pid: int, cpu: int) -> None:
    """Pin ``pid`` to ``cpu`` when there is more than one CPU (best effort)."""
    if cpu_count() < 2 or not hasattr(os, "sched_setaffinity"):
        return
    with contextlib.suppress(OSError):
        os.sched_setaffinity(pid, {cpu})


def affinity_preexec(cpu: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` pinning the child (and so every thread it starts) to ``cpu``."""
    if cpu_count() < 2 or not hasattr(os, "sched_setaffinity"):
        return None

    def pin_child() -> None:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})

    return pin_child


def pin_self_to_loadgen_cpu() -> None:
    pin(0, LOADGEN_CPU)


def raise_fd_limit() -> int:
    """Raise the soft open-files limit to the hard one (children inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 65536
    if soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return int(soft)


def process_cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of every thread of ``pid``, in seconds.

    Uses the nanosecond ``schedstat`` of each task when the kernel offers it and
    falls back to the clock-tick ``stat`` fields otherwise.
    """
    total_ns = 0
    found = False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError as exc:
        raise BenchError(f"process {pid} is gone") from exc
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", encoding="ascii") as fh:
                total_ns += int(fh.read().split()[0])
                found = True
        except (OSError, ValueError, IndexError):
            continue
    if found and total_ns > 0:
        return total_ns / 1e9
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def process_rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise BenchError(f"no VmRSS for process {pid}")


@dataclass
class ServerProcess:
    """A running server under test."""

    target: Target
    options: ServerOptions
    port: int
    argv: list[str]
    proc: subprocess.Popen[bytes]
    log_path: Path
    _log_file: object = field(repr=False, default=None)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def cpu_seconds(self) -> float:
        self.check_alive()
        return process_cpu_seconds(self.pid)

    def rss_bytes(self) -> int:
        self.check_alive()
        return process_rss_bytes(self.pid)

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            code = self.proc.returncode
            tail = self.log_tail()
            raise BenchError(f"{self.target.label} exited with {code}; log tail:\n{tail}")

    def log_tail(self, limit: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        log_file = self._log_file
        if log_file is not None:
            with contextlib.suppress(OSError):
                log_file.close()  # type: ignore[attr-defined]


def _wait_ready(server: ServerProcess, timeout: float) -> None:
    """Bounded wait until the port accepts and answers an HTTP request."""
    deadline = time.monotonic() + timeout
    attempts = int(timeout / 0.05) + 1
    probe = (
        f"GET /__bench_probe HTTP/1.1\r\nHost: {HOST}:{server.port}\r\nConnection: close\r\n\r\n"
    )
    for _ in range(attempts):
        server.check_alive()
        if time.monotonic() > deadline:
            break
        try:
            with socket.create_connection((HOST, server.port), timeout=1.0) as sock:
                sock.sendall(probe.encode("ascii"))
                sock.settimeout(2.0)
                if sock.recv(16).startswith(b"HTTP/1."):
                    return
        except OSError:
            pass
        time.sleep(0.05)
    raise BenchError(
        f"{server.target.label} did not become ready on port {server.port} within {timeout}s; "
        f"command: {shlex.join(server.argv)}\nlog tail:\n{server.log_tail()}"
    )


def start_server(
    target: Target,
    options: ServerOptions,
    *,
    log_dir: Path | None = None,
    ready_timeout: float = READY_TIMEOUT_S,
) -> ServerProcess:
    port = free_port()
    argv = target.command(port, options)
    directory = log_dir or Path(tempfile.gettempdir())
    directory.mkdir(parents=True, exist_ok=True)
    log_path = directory / f"bench-{target.name}-{port}.log"
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed in ServerProcess.stop
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    pythonpath = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_DIR) + (os.pathsep + pythonpath if pythonpath else "")
    proc = subprocess.Popen(
        argv,
        cwd=str(REPO_DIR),
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        preexec_fn=affinity_preexec(SERVER_CPU),
    )
    server = ServerProcess(target, options, port, argv, proc, log_path, log_file)
    try:
        _wait_ready(server, ready_timeout)
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def running(
    target: Target, options: ServerOptions, *, log_dir: Path | None = None
) -> Iterator[ServerProcess]:
    server = start_server(target, options, log_dir=log_dir)
    try:
        yield server
    finally:
        server.stop()


def describe(targets: Sequence[Target]) -> str:
    return ", ".join(t.label for t in targets)
