"""The pool plain ``def`` handlers run in, on its own: outcomes come back to the loop, a
call given up before a thread takes it never runs, and shutting down cancels what has not
started while what runs finishes.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from mcp_http import TIMEOUT

from tornado_mcp.sync.pool import SyncPool


def direct(loop: asyncio.AbstractEventLoop, fn: Any, kwargs: dict[str, Any]) -> Any:
    return fn(**kwargs)


async def test_results_and_exceptions_come_back_to_the_loop() -> None:
    pool = SyncPool(2, "test-pool", direct)
    try:
        def add(a: int, b: int) -> tuple[int, str]:
            return a + b, threading.current_thread().name

        def fail() -> None:
            raise LookupError("nope")

        total, name = await asyncio.wait_for(pool.submit(add, {"a": 2, "b": 3}), TIMEOUT)
        assert total == 5 and name.startswith("test-pool_")
        with pytest.raises(LookupError, match="nope"):
            await asyncio.wait_for(pool.submit(fail, {}), TIMEOUT)
        # Many at once: every outcome is set, however the completions were batched.
        results = await asyncio.wait_for(
            asyncio.gather(*(pool.submit(add, {"a": i, "b": 1}) for i in range(50))), TIMEOUT)
        assert [r[0] for r in results] == [i + 1 for i in range(50)]
        assert pool.pending == 0
    finally:
        pool.shutdown()


async def test_a_call_given_up_before_a_thread_takes_it_never_runs() -> None:
    pool = SyncPool(1, "test-pool", direct)
    gate = threading.Event()
    ran: list[str] = []
    try:
        def blocker() -> str:
            gate.wait(TIMEOUT)
            return "first"

        def record(name: str) -> str:
            ran.append(name)
            return name

        first = pool.submit(blocker, {})
        second = pool.submit(record, {"name": "second"})
        second.cancel()  # the only thread is busy: nothing has taken it yet
        gate.set()
        assert await asyncio.wait_for(first, TIMEOUT) == "first"
        # The queue is first in, first out: once the third ran, the second was passed over.
        assert await asyncio.wait_for(pool.submit(record, {"name": "third"}), TIMEOUT) \
            == "third"
        assert ran == ["third"]
        assert pool.pending == 0
    finally:
        gate.set()
        pool.shutdown()


async def test_shutdown_cancels_what_has_not_started_and_lets_running_calls_finish() -> None:
    pool = SyncPool(1, "test-pool", direct)
    started = threading.Event()
    gate = threading.Event()

    def running() -> str:
        started.set()
        gate.wait(TIMEOUT)
        return "finished"

    first = pool.submit(running, {})
    second = pool.submit(lambda: "never", {})
    await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(
        None, started.wait, TIMEOUT), TIMEOUT)
    pool.shutdown()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(second, TIMEOUT)
    gate.set()
    assert await asyncio.wait_for(first, TIMEOUT) == "finished"
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None, {})


async def test_the_pool_starts_threads_only_as_calls_need_them() -> None:
    pool = SyncPool(4, "test-pool", direct)
    try:
        for _ in range(5):  # one call at a time: one thread serves them all
            await asyncio.wait_for(pool.submit(lambda: None, {}), TIMEOUT)
        assert len(pool._workers) == 1
        gate = threading.Event()
        calls = [pool.submit(gate.wait, {"timeout": TIMEOUT}) for _ in range(6)]
        assert len(pool._workers) == 4  # never more than its bound
        gate.set()
        assert await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT) == [True] * 6
    finally:
        pool.shutdown()
