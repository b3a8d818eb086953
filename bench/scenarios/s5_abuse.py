"""S5: the cost of refusing abusive bodies.

Cases (each sent on a fresh connection, ``repeats`` times):
- ``nesting-1MB``: a 1 MiB body of ``[`` x 512 Ki then ``]`` x 512 Ki, as a
  2026-07-28 tools/call (under the body limit, so the parser meets it);
- ``body-4MiB+1``: a 4 MiB + 1 body (Content-Length says so up front);
- ``init-64KiB+1``: a 64 KiB + 1 legacy ``initialize``.

Time to refusal = from the first byte sent until the response's status line
arrived; the body is written concurrently, so a server that answers early on
Content-Length is timed as such. The status is reported (a 2xx means the server
accepted the body: no refusal; 0 means the connection was closed or reset before
any status line, a refusal the client cannot tell from a network fault). The
server must still answer an echo afterwards.

A send that fails outright (no connection, no answer within ``CASE_TIMEOUT_S``,
or not HTTP) is tried once more on a fresh connection and the row says so
(``retries``); a case that fails twice is counted as an error with the
exception's name and the server's log tail, and the other cases still run. On a
machine whose cores are all busy (the test suite runs the smoke bench beside
its other tests) a peer server can miss a deadline it meets on a quiet one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

from bench.client import (
    Connection,
    initialize_body,
    legacy_headers,
    modern_headers,
    modern_tools_call,
    open_legacy_session,
)
from bench.scenarios.common import Config, median
from bench.servers import HOST, BenchError, ServerOptions, ServerProcess, Target, running

MIB = 1024 * 1024
WRITE_PIECE = 64 * 1024
CASE_TIMEOUT_S = 30.0
CLOSED = 0  # the "status" of a connection closed or reset before a status line
ATTEMPTS = 2  # a send that fails outright is tried once more


def _cases() -> list[tuple[str, dict[str, str], bytes]]:
    half = 512 * 1024
    nesting = b"[" * half + b"]" * half
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/call",'
    big += b'"params":{"name":"echo","arguments":{"text":"'
    tail = b'"}}}'
    big = big + b"x" * (4 * MIB + 1 - len(big) - len(tail)) + tail
    init = initialize_body(1, 64 * 1024 + 1)
    if len(init) != 64 * 1024 + 1:
        raise BenchError(f"initialize body is {len(init)} bytes, not 64 KiB + 1")
    return [
        ("nesting-1MB", modern_headers("tools/call", "echo"), nesting),
        ("body-4MiB+1", modern_headers("tools/call", "echo"), big),
        ("init-64KiB+1", legacy_headers(), init),
    ]


async def _send_abusive(port: int, headers: dict[str, str], body: bytes) -> tuple[int, float]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), 10.0)
    head = ["POST /mcp HTTP/1.1", f"Host: {HOST}:{port}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    head.append(f"Content-Length: {len(body)}")
    raw_head = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")

    async def pump() -> None:
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(raw_head)
            for start in range(0, len(body), WRITE_PIECE):
                writer.write(body[start : start + WRITE_PIECE])
                await writer.drain()

    t0 = time.perf_counter()
    task = asyncio.create_task(pump())
    try:
        try:
            line = await asyncio.wait_for(reader.readline(), CASE_TIMEOUT_S)
        except (ConnectionError, asyncio.IncompleteReadError):
            line = b""
        elapsed = time.perf_counter() - t0
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        writer.transport.abort()
    if not line:  # closed or reset before any status line: a refusal without a response
        return CLOSED, elapsed
    parts = line.split(b" ")
    if len(parts) < 2 or not line.startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise BenchError(f"no HTTP status line, got {line[:80]!r}")
    return int(parts[1]), elapsed


async def _still_serving(server: ServerProcess) -> None:
    conn = Connection(server.port)
    try:
        if server.target.kind == "mcp" and server.target.supports_modern:
            await modern_tools_call(conn, 5, "echo", {"text": "ok"}, timeout=10.0)
        else:
            await open_legacy_session(conn)
    finally:
        await conn.close()


async def _send_with_retry(
    port: int, headers: dict[str, str], body: bytes
) -> tuple[int, float, int]:
    """``_send_abusive`` tried up to ``ATTEMPTS`` times; returns (status, seconds, retries)."""
    for attempt in range(ATTEMPTS):
        try:
            status, elapsed = await _send_abusive(port, headers, body)
        except (TimeoutError, OSError, BenchError):
            if attempt + 1 == ATTEMPTS:
                raise
            continue
        return status, elapsed, attempt
    raise AssertionError("unreachable")


async def _measure_case(
    server: ServerProcess, repeats: int, name: str, headers: dict[str, str], body: bytes
) -> dict[str, Any]:
    times: list[float] = []
    statuses: list[int] = []
    retries = 0
    cpu0 = server.cpu_seconds()
    for _ in range(repeats):
        status, elapsed, retried = await _send_with_retry(server.port, headers, body)
        times.append(elapsed)
        statuses.append(status)
        retries += retried
    cpu = server.cpu_seconds() - cpu0
    await _still_serving(server)
    return {
        "case": name,
        "body_bytes": len(body),
        "statuses": sorted(set(statuses)),
        "refused": all(s == CLOSED or 400 <= s < 600 for s in statuses),
        "median_ms": round(median(times) * 1000, 3),
        "max_ms": round(max(times) * 1000, 3),
        "server_cpu_ms_per_case": round(cpu / repeats * 1000, 3),
        "retries": retries,
    }


async def _measure(server: ServerProcess, repeats: int) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per case that completed, and a line per case that failed."""
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for name, headers, body in _cases():
        try:
            rows.append(await _measure_case(server, repeats, name, headers, body))
        except (TimeoutError, OSError, BenchError) as exc:
            errors.append(
                f"{server.target.label} {name}: {type(exc).__name__}: {exc}; "
                f"server log tail: {server.log_tail(400)!r}"
            )
    return rows, errors


def run(targets: Sequence[Target], cfg: Config) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    errors: list[str] = []
    for target in targets:
        if target.kind == "bare":
            continue
        with running(target, ServerOptions(), log_dir=cfg.log_dir) as server:
            measured, failed = asyncio.run(_measure(server, cfg.s5_repeats))
            server.check_alive()
        errors += failed
        for line in failed:
            cfg.log(f"  S5 ERROR {line}")
        for row in measured:
            rows.append({"target": target.name, **row})
            cfg.log(
                f"  S5 {row['case']:<13} {target.label:<15} HTTP {row['statuses']}  "
                f"median {row['median_ms']:.2f} ms  max {row['max_ms']:.2f} ms  "
                f"cpu {row['server_cpu_ms_per_case']:.2f} ms"
                + ("" if row["refused"] else "  (accepted)")
                + (f"  ({row['retries']} retried)" if row["retries"] else "")
            )
    return {"rows": rows, "errors": len(errors), "error_samples": errors[:5]}
