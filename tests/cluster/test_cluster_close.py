"""``Cluster.close()`` returns even when a task of the cluster lost a cancellation.

On a loaded machine the feed's reader was once seen to go on reading after ``close()``
cancelled it (the cancellation lost inside redis-py as a blocking read timed out), and
``close()``, which waited for it, never returned.  A task that lost its cancellation is
cancelled again until it stops.
"""

from __future__ import annotations

import asyncio

from mcp_http import example_server
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture

from tornado_mcp import Transport
from tornado_mcp.cluster import Cluster


async def test_close_returns_when_a_task_lost_its_first_cancellation(redis: RedisProc) -> None:
    cluster = Cluster(Transport(example_server()), redis.url)
    await cluster.start()
    lost = asyncio.Event()

    async def deaf() -> None:  # what the feed's reader did with the cancellation it lost
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            lost.set()
        await asyncio.sleep(60)

    task = asyncio.ensure_future(deaf())
    cluster._tasks.append(task)
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(cluster.close())
    done, _ = await asyncio.wait({closing}, timeout=5)
    if not done:  # end the deaf task, so that close() ends before the test fails
        task.cancel()
        await asyncio.wait({closing}, timeout=5)
    assert done, "close() is still waiting for the task that lost its cancellation"
    assert lost.is_set() and task.cancelled()
