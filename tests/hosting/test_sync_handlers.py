"""Plain ``def`` handlers run in the transport's bounded pool, off the IOLoop: a tool
blocking for seconds leaves the host application's own routes responsive, the pool holds
``sync_handler_threads`` calls at once, and the ``Context`` is safe to use from there.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
import tornado.web
from mcp_http import TIMEOUT, Running, final, modern_meta, result_of, rpc, running, wait_until

from tornado_mcp import Context, Server, Transport
from tornado_mcp.sync.handlers import wait_on_loop

BLOCK_SECONDS = 2.0
ROUTE_BUDGET = 0.2  # seconds the host app's route may take while a tool blocks


class Hello(tornado.web.RequestHandler):
    def get(self) -> None:
        self.finish("hello")


def host_routes(t: Transport) -> list[Any]:
    return [(r"/hello", Hello)]


def blocking_server(started: threading.Event) -> Server:
    server = Server("blocking")

    @server.tool()
    def block(seconds: float) -> str:
        started.set()
        time.sleep(seconds)  # a blocking driver call, as far as the loop can tell
        return threading.current_thread().name

    return server


async def time_route(srv: Running) -> float:
    url = f"http://127.0.0.1:{srv.port}/hello"
    t0 = time.perf_counter()
    resp = await srv.client.fetch(url, request_timeout=TIMEOUT)
    assert resp.body == b"hello"
    return time.perf_counter() - t0


async def call_block(srv: Running, seconds: float) -> dict[str, Any]:
    return result_of(await srv.modern("tools/call", {"name": "block",
                                                     "arguments": {"seconds": seconds}}))


async def test_a_blocking_sync_tool_does_not_delay_the_host_route() -> None:
    started = threading.Event()
    async with running(blocking_server(started), extra_routes=host_routes) as srv:
        t0 = time.perf_counter()
        call = asyncio.ensure_future(call_block(srv, BLOCK_SECONDS))
        await wait_until(started.is_set)
        latency = await time_route(srv)
        assert latency < ROUTE_BUDGET, latency
        result = await asyncio.wait_for(call, TIMEOUT)
        assert time.perf_counter() - t0 >= BLOCK_SECONDS
        assert result["content"][0]["text"].startswith("tornado-mcp-sync")


async def test_turned_off_plain_tools_run_on_the_loop_thread() -> None:
    started = threading.Event()
    async with running(blocking_server(started), sync_handler_threads=None) as srv:
        result = await call_block(srv, 0.01)
        assert result["content"][0]["text"] == threading.current_thread().name


@pytest.mark.parametrize("threads", [3, 2], ids=["at-bound", "one-over"])
async def test_the_pool_runs_at_most_its_threads_at_once(threads: int) -> None:
    gate = threading.Event()
    lock = threading.Lock()
    running_now = [0]
    peak = [0]
    server = Server("gated")

    @server.tool()
    def gated() -> str:
        with lock:
            running_now[0] += 1
            peak[0] = max(peak[0], running_now[0])
        gate.wait(TIMEOUT)
        with lock:
            running_now[0] -= 1
        return "ok"

    async with running(server, sync_handler_threads=threads) as srv:
        calls = [asyncio.ensure_future(srv.modern("tools/call", {"name": "gated"},
                                                  request_id=i)) for i in range(3)]
        await wait_until(lambda: srv.transport.in_progress == 3 and running_now[0] == threads)
        # Three calls are in; only ``threads`` of them run.  A short window shows the
        # third does not start while the pool is full (there is no event for "not").
        await asyncio.sleep(0.2)
        assert running_now[0] == threads
        gate.set()
        replies = await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT)
        assert [r.status for r in replies] == [200, 200, 200]
    assert peak[0] == threads


def context_server() -> Server:
    server = Server("ctx")

    async def on_loop() -> str:
        return threading.current_thread().name

    @server.tool()
    def steps(n: int, ctx: Context) -> str:
        for i in range(n):
            assert ctx.report_progress(i + 1, n, f"step {i + 1}")
        ctx.info({"done": n})
        ctx.notify_resources_updated("test://watched")
        loop_thread = wait_on_loop(on_loop())
        return f"{threading.current_thread().name} -> {loop_thread}"

    return server


async def test_context_calls_from_the_pool_hop_to_the_loop() -> None:
    async with running(context_server()) as srv:
        sid = await srv.initialize()
        r = await srv.post(rpc("tools/call", {"name": "steps", "arguments": {"n": 3},
                                              "_meta": {"progressToken": "p"}}, 2), session=sid)
        assert r.status == 200 and r.content_type.startswith("text/event-stream")
        methods = [m.get("method") for m in r.messages[:-1]]
        assert methods == ["notifications/progress"] * 3 + ["notifications/message",
                                                            "notifications/resources/updated"]
        assert [m["params"]["progress"] for m in r.messages[:3]] == [1, 2, 3]
        text = final(r)["result"]["content"][0]["text"]
        assert text.startswith("tornado-mcp-sync") and text.endswith("-> MainThread")


async def test_modern_sync_tool_reports_progress_from_the_pool() -> None:
    async with running(context_server()) as srv:
        r = await srv.modern("tools/call", {"name": "steps", "arguments": {"n": 2},
                                            "_meta": {**modern_meta(), "progressToken": 9}})
        assert [m["params"]["progress"] for m in r.messages[:2]] == [1, 2]
        assert final(r)["result"]["content"][0]["text"].startswith("tornado-mcp-sync")


def test_wait_on_loop_outside_the_pool_is_an_error() -> None:
    async def nothing() -> None:
        return None

    with pytest.raises(RuntimeError, match="plain handlers running in the pool"):
        wait_on_loop(nothing())


async def test_plain_resources_and_prompts_run_in_the_pool_too() -> None:
    server = Server("kinds")

    @server.resource("test://thread", name="thread")
    def where() -> str:
        return threading.current_thread().name

    @server.prompt()
    def ask() -> str:
        return threading.current_thread().name

    async with running(server) as srv:
        read = result_of(await srv.modern("resources/read", {"uri": "test://thread"}))
        assert read["contents"][0]["text"].startswith("tornado-mcp-sync")
        got = result_of(await srv.modern("prompts/get", {"name": "ask"}))
        assert got["messages"][0]["content"]["text"].startswith("tornado-mcp-sync")


def test_the_old_import_path_names_the_same_objects() -> None:
    """``tornado_mcp.server.sync_handlers``, where the pool's calls lived before
    ``tornado_mcp.sync``."""
    from tornado_mcp.server import sync_handlers as old
    from tornado_mcp.sync import handlers
    assert old.wait_on_loop is handlers.wait_on_loop is wait_on_loop
    assert all(getattr(old, name) is getattr(handlers, name) for name in old.__all__)
