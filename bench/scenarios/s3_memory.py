"""S3: server RSS per open (idle) session, with a 1.5 KB and a 60 KB initialize.

A fresh server per (target, size): warm up with a few sessions opened and
deleted, read RSS, open N sessions (initialize + notifications/initialized) and
leave them open and idle, settle, read RSS again. (RSS after - before) / N.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from bench.client import (
    Connection,
    delete_session,
    gather_bounded,
    initialize_body,
    open_legacy_session,
)
from bench.scenarios.common import Config
from bench.servers import ServerOptions, ServerProcess, Target, running

POOL = 16
SETTLE_S = 0.5


async def _open_sessions(server: ServerProcess, count: int, init_size: int) -> list[str]:
    conns = [Connection(server.port) for _ in range(min(POOL, count))]
    free: asyncio.Queue[Connection] = asyncio.Queue()
    for conn in conns:
        free.put_nowait(conn)

    async def one() -> str:
        conn = await free.get()
        try:
            return await open_legacy_session(conn, init_size=init_size)
        finally:
            free.put_nowait(conn)

    try:
        return await gather_bounded([one() for _ in range(count)], POOL, timeout=120.0)
    finally:
        for conn in conns:
            await conn.close()


async def _warm_up(server: ServerProcess, init_size: int) -> None:
    conn = Connection(server.port)
    try:
        for _ in range(20):
            sid = await open_legacy_session(conn, init_size=init_size)
            await delete_session(conn, sid)
    finally:
        await conn.close()


def run(targets: Sequence[Target], cfg: Config) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    options = ServerOptions(unbounded=True)
    for size in cfg.s3_init_sizes:
        actual = len(initialize_body(1, size))
        for target in targets:
            if target.kind == "bare":
                continue
            with running(target, options, log_dir=cfg.log_dir) as server:
                asyncio.run(_warm_up(server, size))
                time.sleep(SETTLE_S)
                rss0 = server.rss_bytes()
                t0 = time.perf_counter()
                sessions = asyncio.run(_open_sessions(server, cfg.s3_sessions, size))
                elapsed = time.perf_counter() - t0
                time.sleep(SETTLE_S)
                rss1 = server.rss_bytes()
                server.check_alive()
            per = (rss1 - rss0) / max(1, len(sessions))
            row = {
                "target": target.name,
                "init_bytes": actual,
                "sessions": len(sessions),
                "rss_before_mb": round(rss0 / 2**20, 2),
                "rss_after_mb": round(rss1 / 2**20, 2),
                "kb_per_session": round(per / 1024, 2),
                "open_s": round(elapsed, 3),
                "errors": cfg.s3_sessions - len(set(sessions)),
            }
            rows.append(row)
            cfg.log(
                f"  S3 init {actual:>6} B  {target.label:<15} "
                f"{row['kb_per_session']:>8.2f} KB/session "
                f"({row['rss_before_mb']} -> {row['rss_after_mb']} MB, {len(sessions)} sessions)"
            )
    return {"rows": rows, "errors": sum(int(r["errors"]) for r in rows)}
