"""S4: fan-out of one notifications/resources/updated to 200 and 1,000 streams.

Kinds of stream:
- ``listen``: 2026-07-28 ``subscriptions/listen`` streams whose
  ``resourceSubscriptions`` hold 1 or 1,024 URIs (the touched one is the last);
- ``legacy-get``: legacy sessions that sent ``resources/subscribe`` and hold a GET
  SSE stream (1 URI each);
- ``bare-sse``: the bare Tornado ``GET /sse`` streams fed by ``POST /broadcast``
  (the ceiling).

A trigger (``tools/call touch_resource``, or the bare broadcast) is sent; every
stream timestamps the frame's arrival in ``data_received`` before any parsing,
so the client adds little skew. Latency = arrival - the trigger's send time.
Fan-out time of a round = the slowest stream's latency. One warm-up round, then
``rounds`` measured rounds; CPU per delivered notification is the server's CPU
delta over a round divided by the streams it reached.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.client import (
    Connection,
    dumps,
    gather_bounded,
    legacy_headers,
    legacy_request,
    listen_body,
    modern_headers,
    modern_tools_call,
    open_legacy_session,
)
from bench.scenarios.common import Config, median, percentile
from bench.servers import HOST, BenchError, ServerOptions, ServerProcess, Target, running

UPDATED = b"notifications/resources/updated"
ACK = b"notifications/subscriptions/acknowledged"
BARE_READY = b": ready"
OPEN_CONCURRENCY = 32
ROUND_TIMEOUT_S = 20.0
OPEN_TIMEOUT_S = 180.0


def uri_list(count: int) -> list[str]:
    return [f"test://r/{i}" for i in range(count)]


class SseCounter(asyncio.Protocol):
    """A held HTTP/1.1 response: de-chunks it and timestamps each marker's arrival."""

    def __init__(self, request: bytes, ready_marker: bytes | None) -> None:
        self.request = request
        self.ready_marker = ready_marker
        self.transport: asyncio.Transport | None = None
        self.head = b""
        self.status = 0
        self.headers_done = False
        self.chunked = False
        self.chunk_left = 0
        self.chunk_state = "size"  # "size" | "data" | "crlf"
        self.size_buf = b""
        self.tail = b""
        self.arrivals: list[float] = []
        self.ready = asyncio.get_running_loop().create_future()
        self.closed = False
        self.on_arrival: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.ready.done():
            self.ready.set_exception(
                BenchError(f"stream closed before ready: {exc!r} {self.head[:200]!r}")
            )

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        if not self.headers_done:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end], self.head[end + 4 :]
            self.headers_done = True
            lines = head.split(b"\r\n")
            self.status = int(lines[0].split(b" ")[1])
            lower = head.lower()
            self.chunked = b"transfer-encoding: chunked" in lower
            if self.status != 200 and not self.ready.done():
                self.ready.set_exception(
                    BenchError(f"stream HTTP {self.status}: {self.head[:300]!r}")
                )
                return
            if self.ready_marker is None and not self.ready.done():
                self.ready.set_result(None)
        body = self._dechunk(data) if self.chunked else data
        if not body:
            return
        window = self.tail + body
        hits = window.count(UPDATED)
        if hits:
            for _ in range(hits):
                self.arrivals.append(now)
            if self.on_arrival is not None:
                self.on_arrival(hits)
        if self.ready_marker is not None and not self.ready.done() and self.ready_marker in window:
            self.ready.set_result(None)
        self.tail = window[-64:]

    def _dechunk(self, data: bytes) -> bytes:
        out = bytearray()
        i = 0
        n = len(data)
        while i < n:
            if self.chunk_state == "size":
                j = data.find(b"\n", i)
                if j < 0:
                    self.size_buf += data[i:]
                    break
                line = (self.size_buf + data[i:j]).strip()
                self.size_buf = b""
                i = j + 1
                if not line:
                    continue
                self.chunk_left = int(line.split(b";", 1)[0], 16)
                self.chunk_state = "data" if self.chunk_left else "size"
            elif self.chunk_state == "data":
                take = min(self.chunk_left, n - i)
                out += data[i : i + take]
                i += take
                self.chunk_left -= take
                if self.chunk_left == 0:
                    self.chunk_state = "crlf"
            else:  # skip the CRLF after a chunk
                j = data.find(b"\n", i)
                if j < 0:
                    break
                i = j + 1
                self.chunk_state = "size"
        return bytes(out)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def _request_bytes(
    method: str, path: str, port: int, headers: dict[str, str], body: bytes
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {HOST}:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@dataclass
class Fleet:
    streams: list[SseCounter] = field(default_factory=list)
    arrived: int = 0
    goal: int = 0
    reached: asyncio.Event = field(default_factory=asyncio.Event)

    def on_arrival(self, hits: int) -> None:
        self.arrived += hits
        if self.arrived >= self.goal:
            self.reached.set()

    def close(self) -> None:
        for stream in self.streams:
            stream.close()


async def _open_stream(port: int, request: bytes, ready_marker: bytes | None, fleet: Fleet) -> None:
    loop = asyncio.get_running_loop()
    proto = SseCounter(request, ready_marker)
    await asyncio.wait_for(loop.create_connection(lambda: proto, HOST, port), 10.0)
    proto.on_arrival = fleet.on_arrival
    fleet.streams.append(proto)
    await asyncio.wait_for(proto.ready, 15.0)


async def _open_listen(server: ServerProcess, count: int, uris: list[str], fleet: Fleet) -> None:
    body = listen_body(7, uris)
    request = _request_bytes(
        "POST", "/mcp", server.port, modern_headers("subscriptions/listen"), body
    )
    await gather_bounded(
        [_open_stream(server.port, request, ACK, fleet) for _ in range(count)],
        OPEN_CONCURRENCY,
        OPEN_TIMEOUT_S,
    )


async def _open_legacy(server: ServerProcess, count: int, uri: str, fleet: Fleet) -> list[str]:
    pool: asyncio.Queue[Connection] = asyncio.Queue()
    conns = [Connection(server.port) for _ in range(min(16, count))]
    for conn in conns:
        pool.put_nowait(conn)
    sessions: list[str] = []

    async def one() -> None:
        conn = await pool.get()
        try:
            sid = await open_legacy_session(conn)
            await legacy_request(conn, sid, 2, "resources/subscribe", {"uri": uri})
        finally:
            pool.put_nowait(conn)
        sessions.append(sid)
        headers = legacy_headers(sid)
        del headers["Content-Type"]
        headers["Accept"] = "text/event-stream"
        request = _request_bytes("GET", "/mcp", server.port, headers, b"")
        await _open_stream(server.port, request, None, fleet)

    try:
        await gather_bounded([one() for _ in range(count)], OPEN_CONCURRENCY, OPEN_TIMEOUT_S)
    finally:
        for conn in conns:
            await conn.close()
    return sessions


async def _open_bare(server: ServerProcess, count: int, fleet: Fleet) -> None:
    request = _request_bytes("GET", "/sse", server.port, {"Accept": "text/event-stream"}, b"")
    await gather_bounded(
        [_open_stream(server.port, request, BARE_READY, fleet) for _ in range(count)],
        OPEN_CONCURRENCY,
        OPEN_TIMEOUT_S,
    )


@dataclass
class Trigger:
    """Sends the notification: bare broadcast, modern tools/call, or legacy tools/call."""

    conn: Connection
    kind: str
    session_id: str | None = None  # set for servers that only speak the legacy era

    async def fire(self, uri: str, req_id: int) -> None:
        await _trigger(self.conn, self.kind, uri, req_id, self.session_id)


async def _trigger(
    conn: Connection, kind: str, uri: str, req_id: int, session_id: str | None
) -> None:
    if kind == "bare-sse":
        frame = dumps(
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
        )
        resp = await conn.request(
            "POST", "/broadcast", {"Content-Type": "application/json"}, frame, 10.0
        )
        if resp.status != 200:
            raise BenchError(f"broadcast: HTTP {resp.status}")
    elif session_id is not None:
        params = {"name": "touch_resource", "arguments": {"uri": uri}}
        await legacy_request(conn, session_id, req_id, "tools/call", params, timeout=10.0)
    else:
        await modern_tools_call(conn, req_id, "touch_resource", {"uri": uri}, timeout=10.0)


@dataclass
class RoundResult:
    latencies_s: list[float]
    cpu_us_per_delivery: float

    @property
    def fanout_ms(self) -> float:
        return max(self.latencies_s) * 1000


async def _round(
    server: ServerProcess, fleet: Fleet, trigger: Trigger, uri: str, req_id: int
) -> RoundResult:
    before = [len(s.arrivals) for s in fleet.streams]
    fleet.goal = fleet.arrived + len(fleet.streams)
    fleet.reached.clear()
    cpu0 = server.cpu_seconds()
    t0 = time.perf_counter()
    await trigger.fire(uri, req_id)
    try:
        await asyncio.wait_for(fleet.reached.wait(), ROUND_TIMEOUT_S)
    except TimeoutError as exc:
        missing = sum(1 for s, b in zip(fleet.streams, before, strict=True) if len(s.arrivals) <= b)
        raise BenchError(f"{missing} of {len(fleet.streams)} streams got no notification") from exc
    cpu = server.cpu_seconds() - cpu0
    lat = [s.arrivals[b] - t0 for s, b in zip(fleet.streams, before, strict=True)]
    return RoundResult(lat, cpu / len(lat) * 1e6)


async def _measure(
    server: ServerProcess, kind: str, streams: int, uris: int, rounds: int
) -> dict[str, Any]:
    fleet = Fleet()
    uri_set = uri_list(uris)
    touched = uri_set[-1]
    conn = Connection(server.port)
    t_open = time.perf_counter()
    try:
        if kind == "listen":
            await _open_listen(server, streams, uri_set, fleet)
        elif kind == "legacy-get":
            await _open_legacy(server, streams, touched, fleet)
        else:
            await _open_bare(server, streams, fleet)
        open_s = time.perf_counter() - t_open
        trigger = Trigger(conn, kind)
        if kind != "bare-sse" and not server.target.supports_modern:
            trigger.session_id = await open_legacy_session(conn)
        # Warm-up: repeat (bounded) until every stream is proven live; legacy GET
        # streams have no acknowledgement, so this is also their readiness check.
        for attempt in range(5):
            before = [len(s.arrivals) for s in fleet.streams]
            await trigger.fire(touched, 100 + attempt)
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                if all(len(s.arrivals) > b for s, b in zip(fleet.streams, before, strict=True)):
                    break
                await asyncio.sleep(0.02)
            if all(s.arrivals for s in fleet.streams):
                break
        else:
            raise BenchError("streams did not all receive the warm-up notification")
        await asyncio.sleep(0.2)  # let any duplicate warm-up frames land
        fleet.arrived = sum(len(s.arrivals) for s in fleet.streams)
        results = [await _round(server, fleet, trigger, touched, 1000 + r) for r in range(rounds)]
        if any(s.closed for s in fleet.streams):
            raise BenchError("a stream closed during the measurement")
    finally:
        fleet.close()
        await conn.close()
    samples = [x for r in results for x in r.latencies_s]
    return {
        "open_s": round(open_s, 3),
        "p50_ms": round(percentile(samples, 50) * 1000, 3),
        "p100_ms": round(max(samples) * 1000, 3),
        "fanout_ms": round(median([r.fanout_ms for r in results]), 3),
        "cpu_us_per_delivery": round(median([r.cpu_us_per_delivery for r in results]), 2),
        "rounds": rounds,
    }


@dataclass(frozen=True)
class Case:
    kind: str
    streams: int
    uris: int


def cases(cfg: Config) -> list[Case]:
    out: list[Case] = []
    for streams in cfg.s4_streams:
        out += [Case("listen", streams, u) for u in cfg.s4_uris]
        out.append(Case("legacy-get", streams, 1))
    return out


def _serves(target: Target, kind: str) -> bool:
    if kind == "listen":
        return target.supports_modern
    return kind != "legacy-get" or target.supports_legacy_get


def run(targets: Sequence[Target], cfg: Config) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    options = ServerOptions(unbounded=True)
    bare_done: set[int] = set()
    for case in cases(cfg):
        for target in targets:
            kind = case.kind
            if target.kind == "bare":
                if case.streams in bare_done:
                    continue
                bare_done.add(case.streams)
                kind = "bare-sse"
            elif not _serves(target, kind):
                continue
            uris = 1 if kind == "bare-sse" else case.uris
            label = f"{kind} x{case.streams} uris={uris}"
            try:
                with running(target, options, log_dir=cfg.log_dir) as server:
                    data = asyncio.run(_measure(server, kind, case.streams, uris, cfg.s4_rounds))
                    server.check_alive()
            except (BenchError, OSError, TimeoutError) as exc:
                errors.append(f"{target.name} {label}: {exc}")
                cfg.log(f"  S4 {label:<28} {target.label:<15} ERROR {exc}")
                continue
            row = {
                "target": target.name,
                "kind": kind,
                "streams": case.streams,
                "uris": uris,
                **data,
            }
            rows.append(row)
            cfg.log(
                f"  S4 {label:<28} {target.label:<15} fan-out {data['fanout_ms']:>8.2f} ms  "
                f"p50 {data['p50_ms']:.2f} ms  p100 {data['p100_ms']:.2f} ms  "
                f"cpu {data['cpu_us_per_delivery']:.1f} us/delivery"
            )
    return {"rows": rows, "errors": len(errors), "error_samples": errors[:5]}
