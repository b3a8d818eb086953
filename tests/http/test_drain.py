"""A drain that lets work finish: at shutdown new requests are refused at once (503 with
``Retry-After``) while the requests in flight run to their answers within
``shutdown_grace``, in both eras and in both legacy response modes, in process and behind
SIGTERM on the servers the library starts.
"""

from __future__ import annotations

import asyncio
import signal
import time
from typing import Any

import httpx
import pytest
from conftest import ServerFactory
from mcp_http import LEGACY, TIMEOUT, example_server, rpc, running

from tornado_mcp import Server

pytestmark = pytest.mark.timeout(60)


def slow_server() -> tuple[Server, asyncio.Event, list[int]]:
    """The example server plus ``slow`` (async) and ``slow_def`` (a plain function in the
    pool), each counting in ``started`` and setting the event once ``want`` are running."""
    server = example_server()
    all_started = asyncio.Event()
    started: list[int] = [0, 0]  # [started, want]

    def mark() -> None:
        started[0] += 1
        if started[0] >= started[1]:
            all_started.set()

    @server.tool()
    async def slow(seconds: float) -> str:
        mark()
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def slow_def(seconds: float) -> str:
        loop.call_soon_threadsafe(mark)
        time.sleep(seconds)
        return f"slept {seconds} in a thread"

    loop = asyncio.get_running_loop()
    return server, all_started, started


def _text(reply: Any) -> str:
    """The text of a tool result, answered as JSON or as a one-event SSE response."""
    message = reply.messages[-1] if reply.messages else reply.json
    text: str = message["result"]["content"][0]["text"]
    return text


@pytest.mark.parametrize("json_response", [False, True])
async def test_legacy_calls_in_flight_finish_and_new_requests_are_refused(
        json_response: bool) -> None:
    server, all_started, started = slow_server()
    started[1] = 4
    async with running(server, json_response=json_response, shutdown_grace=10.0) as srv:
        session = await srv.initialize()
        calls = [asyncio.ensure_future(srv.post(
            rpc("tools/call", {"name": name, "arguments": {"seconds": 0.6}}, i), session))
            for i, name in enumerate(["slow", "slow", "slow_def", "slow_def"])]
        await asyncio.wait_for(all_started.wait(), TIMEOUT)
        closing = asyncio.ensure_future(srv.transport.close())
        refused = await srv.post(rpc("tools/list", {}, 99), session)
        assert refused.status == 503 and refused.headers["Retry-After"] == "5"
        assert refused.json["error"]["message"] == "Service unavailable: shutting down"
        answers = await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT)
        assert [a.status for a in answers] == [200] * 4
        assert sorted(_text(a) for a in answers) == [
            "slept 0.6", "slept 0.6", "slept 0.6 in a thread", "slept 0.6 in a thread"]
        await asyncio.wait_for(closing, TIMEOUT)


async def test_modern_calls_in_flight_finish_within_the_grace() -> None:
    server, all_started, started = slow_server()
    started[1] = 3
    async with running(server, shutdown_grace=10.0) as srv:
        calls = [asyncio.ensure_future(srv.modern(
            "tools/call", {"name": name, "arguments": {"seconds": 0.6}}, request_id=i))
            for i, name in enumerate(["slow", "slow", "slow_def"])]
        await asyncio.wait_for(all_started.wait(), TIMEOUT)
        closing = asyncio.ensure_future(srv.transport.close())
        refused = await srv.modern("tools/list", {}, request_id=99)
        assert refused.status == 503 and refused.headers["Retry-After"] == "5"
        answers = await asyncio.wait_for(asyncio.gather(*calls), TIMEOUT)
        assert [a.status for a in answers] == [200] * 3
        assert [_text(a) for a in answers] == [
            "slept 0.6", "slept 0.6", "slept 0.6 in a thread"]
        await asyncio.wait_for(closing, TIMEOUT)


async def test_a_call_past_the_grace_is_cancelled_then() -> None:
    server, all_started, started = slow_server()
    started[1] = 1
    async with running(server, shutdown_grace=0.3) as srv:
        session = await srv.initialize()
        call = asyncio.ensure_future(srv.post(
            rpc("tools/call", {"name": "slow", "arguments": {"seconds": 30}}, 1), session))
        await asyncio.wait_for(all_started.wait(), TIMEOUT)
        began = time.monotonic()
        await asyncio.wait_for(srv.transport.close(), TIMEOUT)
        assert 0.25 <= time.monotonic() - began < 5
        await asyncio.wait_for(call, TIMEOUT)
        assert srv.transport.snapshot().totals.in_flight == 0


def test_sigterm_lets_the_calls_in_flight_finish(server_factory: ServerFactory) -> None:
    """SIGTERM 0.3 s into four 1-second calls: all four are answered with their results."""
    srv = server_factory(["examples/conformance_server.py"])
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": LEGACY}
    with httpx.Client(timeout=TIMEOUT) as client:
        init = client.post(srv.url, headers=headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "drain", "version": "1"}}})
        sid = init.headers["Mcp-Session-Id"]

    async def calls() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            async def one(i: int) -> httpx.Response:
                return await client.post(srv.url, headers={**headers, "Mcp-Session-Id": sid},
                                         json={"jsonrpc": "2.0", "id": i,
                                               "method": "tools/call", "params": {
                                                   "name": "slow_compute",
                                                   "arguments": {"seconds": 1.0}}})
            pending = [asyncio.ensure_future(one(i)) for i in range(1, 5)]
            await asyncio.sleep(0.3)  # the calls are under way: SIGTERM now
            srv.proc.send_signal(signal.SIGTERM)
            return await asyncio.gather(*pending)

    answers = asyncio.run(calls())
    assert [a.status_code for a in answers] == [200] * 4
    assert all("Computed result after 1 s" in a.text for a in answers)
    assert srv.proc.wait(timeout=TIMEOUT) == 0
