"""A rolling deploy under load, the way Kubernetes does one: real server processes
(``examples/conformance_server.py --redis-url``) on fixed ports behind a real nginx that
routes by ``hash $http_mcp_session_id consistent`` (docs/deploy.md's configuration), one
real redis-server, and clients that behave as the docs say (a 503 is retried after its
``Retry-After``; a stream that ends is reopened).  Each process in turn is SIGTERMed,
awaited, and replaced by a new one on the same port.

The clients, all through nginx, count every failure:

* sessionless 2026-07-28 calls (``echo``), a few at a time;
* tasks (``slow_compute``), created and polled to their end;
* legacy sessions, each pinging on its session and holding a GET stream, which must
  never see a 404 (which would make its client initialize again) nor a 502;
* listen streams naming :data:`URIS` numbered URIs, while a publisher touches each of
  them once, in turn: a notification published after a stream was acknowledged and more
  than :data:`MARGIN_S` before it ended must have reached it.

Used by ``tests/cluster/test_cluster_rolling.py`` (one deploy) and by
``python -m bench.cluster --rolling-deploys N`` (the soak).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import REPO_ROOT, ServerProc, ServerStartError
from mcp_http import Reply, Running, Stream, init_msg, rpc
from nginx_proc import NGINX, free_port, start_nginx

URIS = 1000
#: A notification published this long before its stream ended may still be in flight.
MARGIN_S = 0.5
#: A SIGTERMed process exits within its shutdown_grace plus this (seconds).
EXIT_BOUND_S = 15.0
SHUTDOWN_GRACE = "5"
LOG_LEVEL = "warning"

class Fleet:
    """``n`` processes on fixed ports, sharing ``redis_url``, behind one nginx."""

    def __init__(self, redis_url: str, n: int = 3, extra: tuple[str, ...] = ()) -> None:
        self.redis_url = redis_url
        self.ports = [free_port() for _ in range(n)]
        self.extra = extra
        self.procs: list[ServerProc] = []
        self.workdir = Path(tempfile.mkdtemp(prefix="tmcp-rolling-"))
        self.nginx: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.exits: list[float] = []  # seconds from SIGTERM to exit, per replacement
        self.nginx_log = ""  # nginx's error log, kept by stop() (why a request got a 502)

    def _start(self, port: int) -> ServerProc:
        proc = ServerProc([sys.executable, "examples/conformance_server.py", "--no-admin",
                           "--log-level", LOG_LEVEL, "--shutdown-grace", SHUTDOWN_GRACE,
                           "--redis-url", self.redis_url, *self.extra, "--port", str(port)],
                          {**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=REPO_ROOT)
        proc.wait_until_listening()
        return proc

    def start(self) -> None:
        if NGINX is None:
            raise RuntimeError("nginx is not installed")
        self.procs = [self._first(i) for i in range(len(self.ports))]
        self.nginx, self.port = start_nginx(self.ports, self.workdir)

    def _first(self, i: int) -> ServerProc:
        """Process ``i`` of the fleet as it starts: a port that free_port() found free may
        be taken by someone else before the process binds it (another test, a connection's
        local port); then another one is chosen, up to twice."""
        for attempt in range(3):
            try:
                return self._start(self.ports[i])
            except ServerStartError as exc:
                if "Address already in use" not in str(exc) or attempt == 2:
                    raise
                self.ports[i] = free_port()
        raise AssertionError("unreachable")

    def replace(self, i: int) -> float:
        """SIGTERM process ``i``, wait for its exit (bounded), start its replacement on
        the same port; the seconds from SIGTERM to exit."""
        old = self.procs[i]
        sent = time.monotonic()
        old.proc.send_signal(signal.SIGTERM)
        try:
            old.proc.wait(EXIT_BOUND_S + float(SHUTDOWN_GRACE))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"process on port {self.ports[i]} did not exit\n"
                                 f"{old.diagnostics()}") from None
        took = time.monotonic() - sent
        self.exits.append(took)
        assert old.proc.returncode == 0, old.diagnostics()
        old.stop()
        self.procs[i] = self._start(self.ports[i])
        return took

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()
        if self.nginx is not None:
            self.nginx.terminate()
            self.nginx.wait(timeout=10)
        log = self.workdir / "error.log"
        self.nginx_log = log.read_text(errors="replace")[-4000:] if log.exists() else ""
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class Counts:
    """What the clients saw."""

    ok: Counter[str] = field(default_factory=Counter)
    retried: Counter[str] = field(default_factory=Counter)  # 503s retried after Retry-After
    failed: list[str] = field(default_factory=list)  # every failure, described
    reinitialized: int = 0
    published: int = 0
    delivered: int = 0
    lost: int = 0  # notifications that should have reached an open stream and did not
    streams: int = 0


class Load:
    """The clients of :mod:`rolling` (see the module docstring), against ``port``."""

    def __init__(self, port: int, sessions: int = 4, listeners: int = 3,
                 callers: int = 2, tasks: int = 1) -> None:
        self.port = port
        self.n = {"sessions": sessions, "listeners": listeners, "callers": callers,
                  "tasks": tasks}
        self.counts = Counts()
        self.stop = asyncio.Event()
        self._jobs: list[asyncio.Future[Any]] = []
        #: Each publish: (when its call started, when it was answered).
        self.publishes: list[tuple[float, float]] = []
        #: Each listen stream: (acknowledged at, ended at, the numbers it received).
        self.windows: list[tuple[float, float, set[int]]] = []

    def client(self) -> Running:
        return Running.remote(self.port)

    async def _retrying(self, what: str, call: Any) -> Reply | None:
        """A client that honours 503 + Retry-After; any other non-2xx is a failure."""
        for _ in range(60):
            try:
                reply: Reply = await call()
            except Exception as exc:  # a connection error, a timeout
                self.counts.failed.append(f"{what}: {exc!r}")
                return None
            if reply.status == 503 and "Retry-After" in reply.headers:
                self.counts.retried[what] += 1
                await asyncio.sleep(float(reply.headers["Retry-After"]))
                continue
            if reply.status >= 300:
                self.counts.failed.append(f"{what}: {reply.status} {reply.body[:200]!r}")
                return None
            self.counts.ok[what] += 1
            return reply
        self.counts.failed.append(f"{what}: still 503 after 60 tries")
        return None

    def _result(self, what: str, reply: Reply) -> dict[str, Any] | None:
        """The JSON-RPC result of a 2xx answer; an error in it is a failure."""
        last = reply.messages[-1] if reply.messages else {}
        if "result" not in last:
            self.counts.failed.append(f"{what}: {reply.status} {reply.body[:200]!r}")
            return None
        result: dict[str, Any] = last["result"]
        return result

    async def _initialize(self, srv: Running, i: int) -> str | None:
        """Open a legacy session as a client that honours 503 + Retry-After does."""
        r = await self._retrying("initialize", lambda: srv.post(
            init_msg(client_name=f"rolling-{i}")))
        if r is None or self._result("initialize", r) is None:
            return None
        sid = r.headers["Mcp-Session-Id"]
        done = await self._retrying("initialized", lambda: srv.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, session=sid))
        return sid if done is not None else None

    def start(self) -> None:
        jobs = [*(self._caller(i) for i in range(self.n["callers"])),
                *(self._tasker(i) for i in range(self.n["tasks"])),
                *(self._session(i) for i in range(self.n["sessions"])),
                *(self._listener(i) for i in range(self.n["listeners"])),
                self._publisher()]
        self._jobs = [asyncio.ensure_future(j) for j in jobs]

    async def finish(self) -> Counts:
        self.stop.set()
        await asyncio.wait_for(asyncio.gather(*self._jobs), 60)
        self._account()
        return self.counts

    # -- the clients --------------------------------------------------------------------------
    async def _caller(self, i: int) -> None:
        srv = self.client()
        n = 0
        while not self.stop.is_set():
            n += 1
            r = await self._retrying("call", lambda n=n: srv.modern(
                "tools/call", {"name": "echo", "arguments": {"text": f"{i}-{n}"}}, n))
            if r is not None and r.messages[-1]["result"]["content"][0]["text"] != f"{i}-{n}":
                self.counts.failed.append(f"call: wrong answer {r.body[:200]!r}")
            await asyncio.sleep(0.02)

    async def _tasker(self, i: int) -> None:
        from tasks.tasks_http import call, task_request
        srv = self.client()
        while not self.stop.is_set():
            r = await self._retrying("task", lambda: call(srv, "slow_compute",
                                                          {"seconds": 0.2, "label": str(i)}))
            created = None if r is None else self._result("task", r)
            if created is None:
                await asyncio.sleep(0.1)
                continue
            task_id = created["taskId"]
            for _ in range(200):
                got = await self._retrying("task poll", lambda t=task_id: task_request(
                    srv, "tasks/get", t))
                polled = None if got is None else self._result("task poll", got)
                if polled is None:
                    break
                status = polled["status"]
                if status == "completed":
                    break
                if status in ("failed", "cancelled"):
                    self.counts.failed.append(f"task: {got.body[:300]!r}")
                    break
                await asyncio.sleep(0.1)

    async def _session(self, i: int) -> None:
        srv = self.client()
        sid = await self._initialize(srv, i)
        while sid is None and not self.stop.is_set():  # a failure, counted: start over
            await asyncio.sleep(0.5)
            sid = await self._initialize(srv, i)
        if sid is None:
            return
        current = [sid]  # the GET stream follows the session the client has now
        reader = asyncio.ensure_future(self._get_stream(srv, current))
        n = 0
        try:
            while not self.stop.is_set():
                n += 1
                r = await self._retrying("session", lambda n=n, s=current[0]: srv.post(
                    rpc("ping", None, n), session=s))
                if r is None:
                    self.counts.reinitialized += 1  # what a client does after a 404
                    current[0] = await self._initialize(srv, i) or current[0]
                await asyncio.sleep(0.05)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _get_stream(self, srv: Running, current: list[str]) -> None:
        while not self.stop.is_set():
            stream = await self._open(lambda: srv.get_stream(current[0]), "get stream")
            if stream is None:
                await asyncio.sleep(0.5)
                continue
            try:
                await stream.ended.wait()
            finally:
                stream.close()

    async def _open(self, opener: Any, what: str) -> Stream | None:
        """Open a stream, retrying 503s; a stream that started is the caller's."""
        for _ in range(60):
            stream: Stream = await opener()
            if stream.status == 200:
                self.counts.ok[what] += 1
                return stream
            await stream.wait_closed()
            stream.close()
            if stream.status == 503 and "Retry-After" in stream.headers:
                self.counts.retried[what] += 1
                await asyncio.sleep(float(stream.headers["Retry-After"]))
                continue
            self.counts.failed.append(f"{what}: {stream.status} {stream.raw[:200]!r}")
            return None
        return None

    async def _listener(self, i: int) -> None:
        srv = self.client()
        uris = [f"test://seq/{n}" for n in range(URIS)]
        while not self.stop.is_set():
            stream = await self._open(lambda: srv.listen({"resourceSubscriptions": uris},
                                                        request_id=f"l{i}"), "listen")
            if stream is None:
                await asyncio.sleep(0.5)
                continue
            self.counts.streams += 1
            got: set[int] = set()
            try:
                await stream.wait_messages(1, 30)  # the acknowledgement
                acked = time.monotonic()
                seen = 1
                while True:
                    changed = asyncio.ensure_future(stream.ended.wait())
                    stop = asyncio.ensure_future(self.stop.wait())
                    more = asyncio.ensure_future(stream.wait_for(
                        lambda s, k=seen: len(s.messages) > k, 3600))
                    await asyncio.wait({changed, stop, more},
                                       return_when=asyncio.FIRST_COMPLETED)
                    for f in (changed, stop, more):
                        f.cancel()
                    await asyncio.gather(changed, stop, more, return_exceptions=True)
                    for m in stream.messages[seen:]:
                        uri = (m.get("params") or {}).get("uri", "")
                        if uri.startswith("test://seq/"):
                            got.add(int(uri.rsplit("/", 1)[1]))
                    seen = len(stream.messages)
                    if stream.ended.is_set() or self.stop.is_set():
                        break
                self.windows.append((acked, time.monotonic(), got))
            finally:
                stream.close()

    async def _publisher(self) -> None:
        srv = self.client()
        n = 0
        await asyncio.sleep(1.0)  # the streams open first
        while not self.stop.is_set() and n < URIS:
            started = time.monotonic()
            r = await self._retrying("publish", lambda n=n: srv.modern(
                "tools/call", {"name": "touch_resource",
                               "arguments": {"uri": f"test://seq/{n}"}}, n))
            if r is not None:
                self.publishes.append((started, time.monotonic()))
            else:
                self.publishes.append((float("inf"), float("inf")))  # not expected anywhere
            n += 1
            await asyncio.sleep(0.02)

    def _account(self) -> None:
        c = self.counts
        c.published = sum(1 for s, _ in self.publishes if s != float("inf"))
        for acked, ended, got in self.windows:
            for n, (started, answered) in enumerate(self.publishes):
                if started > acked and answered < ended - MARGIN_S:
                    if n in got:
                        c.delivered += 1
                    else:
                        c.lost += 1


async def rolling_deploy(fleet: Fleet, load: Load, settle_s: float = 1.0) -> dict[str, Any]:
    """Replace every process of ``fleet`` in turn under ``load``; the figures."""
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    earlier = len(fleet.exits)
    load.start()
    await asyncio.sleep(settle_s + 1.0)
    for i in range(len(fleet.procs)):
        await loop.run_in_executor(None, fleet.replace, i)
        await asyncio.sleep(settle_s)
    counts = await load.finish()
    exits = fleet.exits[earlier:]
    return {"processes": len(fleet.procs), "replaced": len(exits),
            "max_exit_s": round(max(exits), 2) if exits else None,
            "requests_ok": sum(counts.ok.values()), "retried_503": sum(counts.retried.values()),
            "failed": len(counts.failed), "reinitialized": counts.reinitialized,
            "published": counts.published, "delivered_to_open_streams": counts.delivered,
            "lost_while_open": counts.lost, "listen_streams": counts.streams,
            "seconds": round(time.monotonic() - started, 1),
            "failures": sorted(set(counts.failed))[:10]}
