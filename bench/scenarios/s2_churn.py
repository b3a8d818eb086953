"""S2: session churn, initialize + notifications/initialized + DELETE per second.

An asyncio client with a few keep-alive connections loops full session lifecycles
for a fixed time. The load generator's own CPU share is reported so a reader can
see it was not the bottleneck. Bare Tornado (stateless, hands out ids) is the
ceiling for reference.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.client import Connection, delete_session, open_legacy_session
from bench.scenarios.common import Config, median, percentile
from bench.servers import BenchError, ServerOptions, ServerProcess, Target, running

MAX_CYCLES = 1_000_000


async def _churn(server: ServerProcess, workers: int, duration_s: float) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + duration_s
    cycles = 0

    async def worker() -> None:
        nonlocal cycles
        conn = Connection(server.port)
        try:
            while time.monotonic() < deadline and cycles < MAX_CYCLES:
                cycles += 1
                t0 = time.perf_counter()
                try:
                    session_id = await open_legacy_session(conn)
                    await delete_session(conn, session_id)
                except (OSError, TimeoutError, asyncio.IncompleteReadError, BenchError) as exc:
                    errors.append(repr(exc))
                    if len(errors) > 20:
                        return
                    continue
                latencies.append(time.perf_counter() - t0)
        finally:
            await conn.close()

    cpu0 = server.cpu_seconds()
    client0 = time.process_time()
    start = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(workers))), duration_s + 30)
    elapsed = time.perf_counter() - start
    client_cpu = time.process_time() - client0
    cpu = server.cpu_seconds() - cpu0
    done = len(latencies)
    return {
        "workers": workers,
        "duration_s": round(elapsed, 3),
        "sessions": done,
        "errors": len(errors),
        "error_samples": errors[:3],
        "sessions_per_s": round(done / elapsed, 1),
        "p50_ms": round(median(latencies) * 1000, 3),
        "p99_ms": round(percentile(latencies, 99) * 1000, 3),
        "server_cpu_us_per_session": round(cpu / done * 1e6, 1) if done else 0.0,
        "loadgen_cpu_share": round(client_cpu / elapsed, 3),
    }


def run(targets: Sequence[Target], cfg: Config) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    options = ServerOptions(unbounded=True)
    for target in targets:
        with running(target, options, log_dir=cfg.log_dir) as server:
            if not cfg.smoke:  # warm up code paths and allocator
                asyncio.run(_churn(server, cfg.s2_workers, 0.5))
            row = {
                "target": target.name,
                **asyncio.run(_churn(server, cfg.s2_workers, cfg.s2_duration_s)),
            }
            server.check_alive()
        rows.append(row)
        cfg.log(
            f"  S2 {target.label:<15} {row['sessions_per_s']:>8.1f} sessions/s  "
            f"p50 {row['p50_ms']:.2f} ms  cpu {row['server_cpu_us_per_session']:.0f} us/session  "
            f"loadgen cpu {row['loadgen_cpu_share']:.0%}"
            + (f"  ERRORS {row['errors']} {row['error_samples']}" if row["errors"] else "")
        )
    return {"rows": rows, "errors": sum(int(r["errors"]) for r in rows)}
