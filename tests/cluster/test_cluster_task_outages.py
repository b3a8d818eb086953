"""Tasks across Redis trouble, with a real redis-server and, for a runner cut off alone, a
TCP proxy between it and Redis: a task that finishes while its runner cannot reach Redis
reads ``completed`` once it can; a Redis restart without persistence loses no task (the
runners write their records back, and running tasks' results land); a cancel that the
runner cannot hear is recorded, so the task ends ``cancelled``, never ``completed``.
Cluster members are served in this test process (:mod:`nodes`)."""

from __future__ import annotations

import asyncio

from nodes import WAIT, Node, node, until_connected, until_listed
from redis_proc import RedisProc, redis_fixture  # noqa: F401 - the redis fixture
from tasks.tasks_http import get, start, task_request, until
from tcp_proxy import Proxy, proxy_to

from tornado_mcp.protocol import INTERNAL_ERROR


async def running_then_cut_off(runner: Node, other: Node, proxy: Proxy, seconds: float,
                               label: str) -> str:
    """A task of ``seconds`` started on ``runner``, working as ``other`` sees it, then
    ``runner`` cut off from Redis; the task's id."""
    await until_listed(runner, other)
    task_id = await start(runner.srv, "slow_compute", {"seconds": seconds, "label": label})
    assert (await until(other.srv, task_id, ("working",)))["status"] == "working"
    proxy.cut()
    await until_connected(runner, False)
    return task_id


async def test_a_task_finished_while_its_runner_was_cut_off_completes_when_it_is_back(
        redis: RedisProc) -> None:
    with proxy_to(redis.path) as proxy:
        async with node(redis, url=proxy.url) as runner, node(redis) as other:
            task_id = await running_then_cut_off(runner, other, proxy, 0.5, "cut")
            # It finishes while its runner cannot write: Redis still says "working".
            await asyncio.wait_for(runner.transport.tasks.jobs[task_id].task, WAIT)
            assert (await get(other.srv, task_id))["status"] == "working"
            proxy.restore()
            done = await until(other.srv, task_id, timeout=WAIT)
            assert done["status"] == "completed", done
            assert done["result"]["content"][0]["text"] == "Computed cut after 0.5 s"


async def test_a_redis_restart_without_persistence_loses_no_task(redis: RedisProc) -> None:
    async with node(redis) as runner, node(redis) as other:
        await until_listed(runner, other)
        finished = await start(runner.srv, "slow_compute", {"seconds": 0, "label": "one"})
        await until(other.srv, finished)
        running = await start(runner.srv, "slow_compute", {"seconds": 1.5, "label": "two"})
        redis.kill()
        redis.start()  # empty: every task record is gone
        await until_connected(runner, False)
        await until_connected(runner, True)
        await until_connected(other, True)
        kept = await until(other.srv, finished, timeout=WAIT)
        assert kept["result"]["content"][0]["text"] == "Computed one after 0 s"
        done = await until(other.srv, running, timeout=WAIT)
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "Computed two after 1.5 s"


async def test_a_cancel_the_runner_cannot_hear_is_never_followed_by_completed(
        redis: RedisProc) -> None:
    with proxy_to(redis.path) as proxy:
        async with node(redis, url=proxy.url) as runner, node(redis) as other:
            task_id = await running_then_cut_off(runner, other, proxy, 1.0, "c")
            # Acknowledged by the other process: the cancel is recorded in Redis.
            r = await task_request(other.srv, "tasks/cancel", task_id)
            assert r.status == 200, r.body
            assert "error" not in r.messages[-1], r.body
            job = runner.transport.tasks.jobs[task_id].task
            assert job is not None
            await asyncio.wait_for(asyncio.shield(job), WAIT)  # it ran to its end, unheard
            proxy.restore()
            ended = await until(other.srv, task_id, timeout=WAIT)
            assert ended["status"] == "cancelled", ended
            await asyncio.sleep(1.5)  # and it stays so
            assert (await get(other.srv, task_id))["status"] == "cancelled"


async def test_a_cancel_reaching_a_live_runner_stops_it(redis: RedisProc) -> None:
    async with node(redis) as runner, node(redis) as other:
        await until_listed(runner, other)
        task_id = await start(runner.srv, "slow_compute", {"seconds": 30, "label": "stop"})
        await until(other.srv, task_id, ("working",))
        r = await task_request(other.srv, "tasks/cancel", task_id)
        assert r.status == 200, r.body
        ended = await until(other.srv, task_id, timeout=WAIT)
        assert ended["status"] == "cancelled", ended
        assert task_id not in runner.transport.tasks.jobs  # its work stopped
        assert ended.get("error", {}).get("code") != INTERNAL_ERROR
