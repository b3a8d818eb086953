"""A process that leaves the cluster always ends, whatever redis-py does with a cancelled
command.

Measured, not assumed: redis-py (8.2.0 here) sometimes *returns* from an ``XREAD`` whose
task was cancelled: a cancellation that lands while the command is starting (taking its
connection) or as its reply arrives is swallowed, and the command runs to its end (the
whole ``BLOCK``).  A loop that relied on the cancellation alone then kept reading forever,
and its process never exited.  The first test cancels the feed reader right after an
entry woke it (as it starts its next ``XREAD``), over and over, against a real
redis-server, and counts how often redis-py swallowed the cancellation; the reader must
end every time (within its ``BLOCK``, shortened here to keep the test quick).  The second
SIGTERMs real server processes while the feed they read is busy: every one exits within
its bound (``python -m bench.cluster --sigterm-cycles 100`` runs the long version).
"""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import time
from typing import Any

import pytest
import redis.asyncio as aioredis
from conftest import ServerFactory
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture

from tornado_mcp.cluster import feed as feed_module
from tornado_mcp.cluster.feed import Feed
from tornado_mcp.cluster.link import Link
from tornado_mcp.options import Options

#: Cycles of each test: the first is cheap (a few ms each), the second starts a process.
CANCELLATIONS = 50
SIGTERMS = 4
#: A process with shutdown_grace 1 s exits well within this (seconds).
EXIT_BOUND = 10.0


async def test_the_feed_reader_ends_even_when_redis_py_swallows_its_cancellation(
        redis: RedisProc, record_property: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(feed_module, "READ_BLOCK_MS", 50)
    link = Link(redis.url)
    await link.connect()
    delivered: list[str] = []
    feed = Feed(link, "000000000001", link.namespace, Options(),
                deliver=lambda method, params: delivered.append(method),
                on_refusal=lambda kind: None)
    await feed.start_at_end()
    writer: Any = aioredis.from_url(redis.url)
    swallowed = cancelled = 0
    try:
        for n in range(CANCELLATIONS):
            link.closing = False
            reader = asyncio.ensure_future(feed.read_loop())
            await asyncio.sleep(0.002)  # blocked in XREAD
            await writer.xadd(feed.key, {"o": "000000000002", "s": n + 1, "k": "n",
                                         "m": "notifications/tools/list_changed"})
            await asyncio.sleep(random.choice((0, 0, 0.0001, 0.0003, 0.0006)))
            link.closing = True  # what Cluster.close() does, then it cancels
            reader.cancel()
            done, _ = await asyncio.wait({reader}, timeout=2.0)
            assert done, f"the reader ran on after cancellation {n}"
            if reader.cancelled():
                cancelled += 1
            else:
                assert reader.exception() is None
                swallowed += 1  # XREAD returned: the loop saw it was closed
    finally:
        await writer.aclose()
        await link.aclose()
    record_property("xread_cancellations_swallowed", f"{swallowed} of {CANCELLATIONS}")
    print(f"redis-py returned from {swallowed} of {CANCELLATIONS} cancelled XREADs")
    assert swallowed + cancelled == CANCELLATIONS


@pytest.mark.timeout(SIGTERMS * (EXIT_BOUND + 30))
async def test_every_sigterm_ends_the_process_while_its_feed_is_busy(
        redis: RedisProc, server_factory: ServerFactory) -> None:
    publisher: Any = aioredis.from_url(redis.url)
    busy = asyncio.Event()

    async def publish() -> None:  # a busy feed: the reader's XREAD returns all the time
        n = 0
        while not busy.is_set():
            n += 1
            await publisher.xadd("tornado-mcp:feed", {
                "o": "0000000000ff", "s": n, "k": "n", "m": "notifications/tools/list_changed"})
            await asyncio.sleep(0.005)

    traffic = asyncio.ensure_future(publish())
    took = []
    try:
        for _ in range(SIGTERMS):
            proc = server_factory(["examples/conformance_server.py", "--no-admin",
                                   "--log-level", "warning", "--shutdown-grace", "1",
                                   "--redis-url", redis.url])
            await asyncio.sleep(random.uniform(0.05, 0.4))
            started = time.monotonic()
            proc.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.get_running_loop().run_in_executor(
                    None, lambda p=proc: p.proc.wait(EXIT_BOUND))
            except subprocess.TimeoutExpired:
                raise AssertionError(f"no exit {EXIT_BOUND} s after SIGTERM\n"
                                     f"{proc.diagnostics()}") from None
            took.append(time.monotonic() - started)
            assert proc.proc.returncode == 0, proc.diagnostics()
            assert "still running" not in proc.stderr  # the last-resort timer never fired
    finally:
        busy.set()
        await traffic
        await publisher.aclose()
    print(f"SIGTERM to exit: max {max(took):.2f} s over {len(took)} cycles")
