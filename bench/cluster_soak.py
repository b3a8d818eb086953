"""Soak runs of the cluster's deploy and failover promises (``python -m bench.cluster``
with ``--sigterm-cycles N``, ``--rolling-deploys N`` or ``--failovers N``), the long
versions of ``tests/cluster/test_cluster_exit.py``, ``test_cluster_rolling.py`` and
``test_cluster_failover.py``, with real redis-server, nginx and redis-sentinel processes.
Each prints one Markdown table row of figures, the ones docs/deploy.md quotes.
"""

from __future__ import annotations

import asyncio
import random
import signal
import statistics
import subprocess
import time
from typing import Any

import redis.asyncio as aioredis
from conftest import start_server
from redis_proc import RedisProc
from rolling import Fleet, Load, rolling_deploy
from sentinel_proc import Sentinels, failover_under_load

#: A process with shutdown_grace 1 s exits within this, or the cycle counts as hung.
EXIT_BOUND_S = 10.0
#: The failover figures that add up over runs.
COUNTED = ("published", "delivered", "lost", "counted_lost", "unreplicated",
           "duplicates_skipped")


async def sigterm_cycles(n: int) -> dict[str, Any]:
    """``n`` times: start a process on a busy feed, SIGTERM it after 50-400 ms, and time
    its exit (a process still running ``EXIT_BOUND_S`` later is killed and counted)."""
    redis = RedisProc()
    redis.start()
    publisher: Any = aioredis.from_url(redis.url)
    stop = asyncio.Event()

    async def traffic() -> None:
        seq = 0
        while not stop.is_set():
            seq += 1
            await publisher.xadd("tornado-mcp:feed", {
                "o": "0000000000ff", "s": seq, "k": "n",
                "m": "notifications/tools/list_changed"}, maxlen=10_000, approximate=True)
            await asyncio.sleep(0.002)

    feeding = asyncio.ensure_future(traffic())
    exits: list[float] = []
    hung = 0
    loop = asyncio.get_running_loop()
    try:
        for _ in range(n):
            proc = await loop.run_in_executor(None, lambda: start_server(
                ["examples/conformance_server.py", "--no-admin", "--log-level", "warning",
                 "--shutdown-grace", "1", "--redis-url", redis.url]))
            await asyncio.sleep(random.uniform(0.05, 0.4))
            sent = time.monotonic()
            proc.proc.send_signal(signal.SIGTERM)
            try:
                await loop.run_in_executor(None, proc.proc.wait, EXIT_BOUND_S)
                exits.append(time.monotonic() - sent)
            except subprocess.TimeoutExpired:
                hung += 1
            proc.stop()
    finally:
        stop.set()
        await feeding
        await publisher.aclose()
        redis.stop()
    return {"cycles": n, "exited": len(exits), "hung": hung,
            "p50_exit_s": round(statistics.median(exits), 2) if exits else None,
            "max_exit_s": round(max(exits), 2) if exits else None}


async def rolling_deploys(n: int) -> dict[str, Any]:
    """``n`` rolling deploys of three processes behind nginx, one after another, each under
    the load of ``tests/cluster/rolling.py``; the figures summed."""
    redis = RedisProc()
    redis.start()
    fleet = Fleet(redis.url)
    fleet.start()
    total: dict[str, Any] = {}
    try:
        for _ in range(n):
            figures = await rolling_deploy(fleet, Load(fleet.port))
            for key, value in figures.items():
                if key == "failures":
                    total.setdefault(key, []).extend(value)
                elif key == "max_exit_s":
                    total[key] = max(total.get(key) or 0.0, value or 0.0)
                elif isinstance(value, (int, float)) and key != "processes":
                    total[key] = total.get(key, 0) + value
    finally:
        fleet.stop()
        redis.stop()
    total["deploys"] = n
    total["failures"] = total.get("failures", [])[:10]
    return total


async def failovers(n: int) -> dict[str, Any]:
    """``n`` Sentinel failovers under load, each on a fresh primary, replica and three
    sentinels; the figures summed."""
    total: dict[str, Any] = {"failovers": n}
    back: list[float] = []
    for _ in range(n):
        sentinels = Sentinels()
        try:
            await asyncio.get_running_loop().run_in_executor(None, sentinels.start)
            figures = await failover_under_load(sentinels)
        finally:
            sentinels.stop()
        back.append(figures.pop("reconnected_after_s"))
        for key, value in figures.items():
            if isinstance(value, bool):
                total[key] = total.get(key, True) and value
            elif key in COUNTED:
                total[key] = total.get(key, 0) + value
            else:  # the task's end, the session's status: the values seen
                total.setdefault(key, set()).add(value)
    total["reconnected_after_s_max"] = max(back)
    return {k: sorted(v) if isinstance(v, set) else v for k, v in total.items()}
